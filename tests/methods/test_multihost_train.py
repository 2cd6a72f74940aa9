"""``PolicyEngine.train`` with 2 processes x 4 fake CPU devices (issue 21), launched here on
127.0.0.1 (tests/methods/_multihost_worker.py), against this process's 8 devices:

* each process passes its own rows -- 3 rows padded to 32 on process 0, 2 rows padded to 16
  on process 1 (``scope="local"``): they are gathered into one 5-row batch re-padded to 8 rows x
  32, trained with length-bucketed micro-batches (buckets 16 and 32), then a second update on
  the merged batch (``scope="global"``); params and metrics equal the 1-process 8-device run
  of the same two updates (1e-6, fp32);
* different "global" batches on the two processes: a DistributedError on both, no hang;
* one process killed while the other waits in the step's collective: the survivor exits with
  status 3 and a clear DistributedError within the bound (``distributed.timeout_s``);
* ``rl.global_batch.merge_local_batches`` and ``collectives.share`` by hand-computed values.
"""
import os
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest

from skillax import collectives
from skillax.rl.global_batch import merge_local_batches
from tests._xla import xla_flags
from tests.methods import _multihost_worker as worker
from tests.methods.test_skillos_integration import _tiny_model_dir

REPO = pathlib.Path(__file__).resolve().parents[2]
needs_8 = pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 (fake) devices: tests/conftest.py sets them")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return _tiny_model_dir(str(tmp_path_factory.mktemp("model")))


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(out, role, model, extra=()):
    """Start the two workers (process 0 and 1) of ``role``; their stdout / stderr go to files
    (``OUT/log/<role>-<i>.out|err``: a pipe nobody drains could block a chatty worker)."""
    port = free_port()
    env = dict(os.environ, XLA_FLAGS=xla_flags(4), JAX_PLATFORMS="cpu",
               HF_HUB_OFFLINE="1")
    logs = pathlib.Path(out) / "log"
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for i in range(2):
        n = len(list(logs.glob(f"{role}-{i}-*.out")))
        o, e = (open(logs / f"{role}-{i}-{n}.{x}", "w+") for x in ("out", "err"))
        p = subprocess.Popen([sys.executable, "-m", "tests.methods._multihost_worker", str(out), role, model,
                              str(port), str(i), *extra], cwd=REPO, env=env, stdout=o, stderr=e, text=True)
        p.logs = (o, e)
        procs.append(p)
    return procs


def _read(f) -> str:
    f.flush()
    f.seek(0)
    return f.read()


def finish(procs, timeout=240):
    """[(returncode, stdout, stderr)]; a worker still running after ``timeout`` is killed."""
    out = []
    try:
        for p in procs:
            p.wait(timeout=timeout)
            out.append((p.returncode, _read(p.logs[0]), _read(p.logs[1])))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in p.logs:
                f.close()
    return out


def test_share_splits_contiguously_in_process_order():
    assert [collectives.share(5, i, 2) for i in range(2)] == [(0, 3), (3, 5)]
    assert [collectives.share(1, i, 3) for i in range(3)] == [(0, 1), (1, 1), (1, 1)]
    assert [collectives.share(6, i, 3) for i in range(3)] == [(0, 2), (2, 4), (4, 6)]
    assert collectives.share(4) == (0, 4)                       # one process: everything
    with pytest.raises(ValueError, match="0 <= index < count"):
        collectives.share(4, 2, 2)
    assert collectives.allgather_objects({"a": 1}) == [{"a": 1}]
    collectives.agree("anything", b"x")                          # one process: nothing to compare


def test_merge_local_batches_by_hand():
    b0, b1 = worker.local_batches(50)
    m = merge_local_batches([b0, b1], rows_multiple=4, length_buckets=(16, 32), pad_id=7)
    assert m["tokens"].shape == (8, 32) and m["num_rows"] == 5
    assert m["episodes"].tolist() == [0, 0, 1, 2, 3, -1, -1, -1]      # process 1's ids after 0's (max 1)
    assert m["valid"].sum(1).tolist() == [12, 14, 30, 10, 16, 0, 0, 0]
    np.testing.assert_array_equal(m["tokens"][:3], np.where(b0["valid"], b0["tokens"], 7))
    np.testing.assert_array_equal(m["tokens"][3:5, :16], np.where(b1["valid"], b1["tokens"], 7))
    assert (m["tokens"][3:5, 16:] == 7).all() and (m["tokens"][5:] == 7).all()
    assert (m["positions"] == np.arange(32)).all()
    adv = m["objectives"]["util"]["advantages"]
    np.testing.assert_array_equal(adv[:5], np.concatenate([b0["objectives"]["util"]["advantages"],
                                                           b1["objectives"]["util"]["advantages"]]))
    assert (adv[5:] == 0).all() and m["objectives"]["util"]["loss_mask"][5:].sum() == 0
    assert m["objectives"]["util"]["loss_mask"].sum() == (12 + 14 + 30 + 10 + 16) - 5 * 6
    with pytest.raises(ValueError, match="exceeds the largest training bucket 16"):
        merge_local_batches([b0, b1], rows_multiple=4, length_buckets=(16,))
    bad = dict(b1, objectives={"other": b1["objectives"]["util"]})
    with pytest.raises(ValueError, match="different keys"):
        merge_local_batches([b0, bad], rows_multiple=4, length_buckets=(32,))


@needs_8
def test_two_process_train_equals_one_process(tiny_model, tmp_path):
    from skillax.methods.common.engine import PolicyEngine

    procs = launch(tmp_path, "train", tiny_model)
    try:                                                  # the reference runs while the workers do
        engine = PolicyEngine.create(worker.engine_config(tiny_model), tmp_path / "ref")
        assert dict(engine.mesh.shape) == {"data": 2, "fsdp": 2, "tensor": 2}
        merged = merge_local_batches(worker.local_batches(engine.model_cfg.vocab_size), rows_multiple=4,
                                     length_buckets=(16, 32))
        m1, m2 = worker.train_twice(engine, merged, merged, scope_first="global")
        want = worker.gathered_params(engine)
    finally:
        results = finish(procs)
    for rc, _, err in results:
        assert rc == 0, err[-3000:]
    got = np.load(tmp_path / "train.npz")
    diffs = {k: float(np.abs(got[k] - v).max()) for k, v in want.items()}
    print("max |2-process - 1-process| over params:", max(diffs.values()))
    assert all(d <= 1e-6 for d in diffs.values()), diffs
    assert m1["tokens"] == (12 + 14 + 30 + 10 + 16) - 5 * 6 == float(got["m1:tokens"])
    for name, ref in (("m1", m1), ("m2", m2)):
        for k, v in ref.items():
            if not k.startswith("time/"):
                assert float(got[f"{name}:{k}"]) == pytest.approx(v, rel=1e-5, abs=1e-6), (name, k)


def test_different_global_batches_fail_on_both_processes(tiny_model, tmp_path):
    import time

    t0 = time.monotonic()
    results = finish(launch(tmp_path, "mismatch", tiny_model), timeout=180)
    for rc, _, err in results:
        assert rc == 3, err[-3000:]
        assert "DistributedError: the processes disagree on the training batch" in err
        assert "process 0: " in err and "process 1: " in err
    print(f"both processes failed cleanly in {time.monotonic() - t0:.1f} s")


def test_killed_peer_ends_the_other_process_with_a_clear_error(tiny_model, tmp_path):
    import time

    procs = launch(tmp_path, "stall", tiny_model, extra=("--config.distributed.timeout_s=20",))
    try:
        deadline = time.monotonic() + 180
        while not all((tmp_path / f"ready-{i}").exists() for i in range(2)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "workers did not start"
            time.sleep(0.5)
        time.sleep(2.0)                                # process 0 is now waiting in the step's gather
        procs[1].kill()
        t0 = time.monotonic()
        procs[0].wait(timeout=60)
        waited = time.monotonic() - t0
        err = _read(procs[0].logs[1])
    finally:
        finish(procs, timeout=5)
    print(f"process 0 exited {waited:.1f} s after process 1 was killed")
    assert procs[0].returncode == 3, err[-3000:]
    assert "skillax: process 0: DistributedError: an all-gather between the 2 processes failed" in err
    assert "another process died or cannot be reached" in err
    assert waited < 20 + 10


def test_local_mesh_shape_divides_the_batch_axes():
    from skillax.distributed import local_mesh_shape

    assert local_mesh_shape((2, 2, 2), 2) == (1, 2, 2)       # the sampler replica of the tests here
    assert local_mesh_shape((1, 8, 1), 2) == (1, 4, 1)
    assert local_mesh_shape((4, 1, 2), 4) == (1, 1, 2)
    assert local_mesh_shape((2, 4, 1), 4) == (1, 2, 1)
    assert local_mesh_shape((1, 4, 1), 4) == (1, 1, 1)       # one device per process: no mesh
    with pytest.raises(ValueError, match="2 processes do not divide data x fsdp = 1"):
        local_mesh_shape((1, 1, 8), 2)


def test_first_reason_with_one_process_is_the_reason_itself():
    from skillax import collectives

    assert collectives.first_reason("deadline reached") == "deadline reached"
    assert collectives.first_reason(None) is None
