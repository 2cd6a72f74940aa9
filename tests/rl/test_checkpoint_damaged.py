"""Issue 23, item 2: a damaged newest checkpoint falls back to the previous intact one with a
one-line warning naming it; none intact -> one paragraph, nothing moved."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.rl.checkpoint import CheckpointError, Checkpointer


def _state(v):
    return {"w": jnp.arange(1000.0) * (v + 1), "rng": jax.random.key(v)}   # not constant: compression keeps it big


def _cut_tensor(step_dir):
    """Cut the biggest tensor data file of a step in half (a kill or a full disk mid-write)."""
    f = max((p for p in (step_dir / "state").rglob("*") if p.is_file() and "/d/" in str(p)),
            key=lambda p: p.stat().st_size)
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _cut_host(step_dir):
    f = step_dir / "host" / "metadata"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def test_damaged_latest_falls_back_then_all_damaged_is_one_error(tmp_path):
    d = tmp_path / "checkpoints"
    with Checkpointer(d, max_to_keep=None) as ck:
        for s in range(3):
            ck.save(s, _state(s), {"s": s}, {"lib": bytes([s]) * 3})
    _cut_tensor(d / "2")
    _cut_host(d / "1")
    lines = []
    with Checkpointer(d, max_to_keep=None) as ck:
        with pytest.raises(Exception):             # the plain restore of the cut step still fails
            ck.restore(2, target=_state(0))
        step, state, host, files = ck.restore_latest(target=_state(9), log=lines.append)
        assert (step, host, files) == (0, {"s": 0}, {"lib": b"\0\0\0"})
        np.testing.assert_array_equal(np.asarray(state["w"]), np.arange(1000.0, dtype=np.float32))
        np.testing.assert_array_equal(jax.random.key_data(state["rng"]), jax.random.key_data(jax.random.key(0)))
        assert len(lines) == 2 and all(len(x.splitlines()) == 1 for x in lines)
        assert "step 2" in lines[0] and str(d / "2") in lines[0] and "OUT_OF_RANGE" in lines[0]
        assert "step 1" in lines[1] and "JSONDecodeError" in lines[1] and "resuming from step 0" in lines[1]
        assert ck.all_steps() == [0]
        assert sorted(p.name.split("-")[0] for p in (tmp_path / "checkpoints.damaged").iterdir()) == ["1", "2"]
        ck.save(1, _state(11), {"s": 11})          # the step numbers can be saved again
        assert ck.restore_latest(target=_state(0), log=lines.append)[0] == 1
    # every step damaged: one paragraph naming each, nothing moved
    _cut_tensor(d / "0")
    _cut_host(d / "1")
    with Checkpointer(d, max_to_keep=None) as ck:
        with pytest.raises(CheckpointError) as err:
            ck.restore_latest(target=_state(0), log=lines.append)
        msg = str(err.value)
        assert "none of the 2 checkpoints" in msg and "step 1" in msg and "step 0" in msg
        assert len(msg.splitlines()) == 1 and err.value.__cause__ is None
        assert ck.all_steps() == [0, 1]
        # host-only inspection (mode=library) needs no tensor: step 0's host still reads
        assert ck.restore_host() == ({"s": 0}, {"lib": b"\0\0\0"})
    assert ck.all_steps() == [0, 1] and len(lines) == 2


def test_restore_host_skips_a_damaged_latest(tmp_path, capsys):
    d = tmp_path / "ck"
    with Checkpointer(d) as ck:
        ck.save(0, _state(0), {"s": 0}, {"f": b"a"})
        ck.save(1, _state(1), {"s": 1}, {"f": b"b"})
    _cut_host(d / "1")
    with Checkpointer(d) as ck:
        assert ck.restore_host() == ({"s": 0}, {"f": b"a"})
        assert ck.all_steps() == [0, 1]            # read-only inspection moves nothing
    assert "step 1" in capsys.readouterr().out
