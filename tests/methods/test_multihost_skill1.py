"""Skill1 as 2 cooperating processes x 4 fake CPU devices (issue 21) equals the 1-process
8-device run with the same seed: a tiny random policy (SmolLM2 tokenizer) on real TextWorld
games, real MiniLM retrieval and SQLite library seeded with the hand-written skills, 2 RL steps
of 2 tasks x 2 rollouts (each process plays one task per step on its own pool), checkpoint,
evaluation of both conditions on 2 games (one per process). The 2-process run is killed in
step 1 (process 1 SIGKILLed): process 0 exits with status 3 and a one-line DistributedError
within seconds; both restart and resume from step 0's checkpoint (issue 21's kill test).

Same: every metric but timings, the library (SQLite dump and bytes of ``library.sqlite``,
``skills/``), ``eval.json``, the checkpoint's host payload, and the parameters (within 1e-6).
"""
import json
import sqlite3

import jax
import numpy as np
import pytest

from tests.methods.test_multihost_train import finish, launch, needs_8, tiny_model  # noqa: F401 (fixture)
from tests.methods._multihost_worker import skill1_config as run_config

TIMING = ("time/", "tokens_per_s", "compile_count", "compile/", "elapsed")


def metrics(work):
    lines = [json.loads(x) for x in (work / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in m.items() if not k.startswith(TIMING)} for m in lines]


def checkpoint(work):
    """(step, params as numpy by path, host payload) of the run's last checkpoint, read onto
    one device whatever mesh saved it."""
    from skillax.rl.checkpoint import Checkpointer

    ck = Checkpointer(work / "checkpoints")
    try:
        step = ck.latest_step()
        one = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        meta = ck._mgr.item_metadata(step)["state"]
        target = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=one), meta)
        state, host, _ = ck.restore(step, target=target)
    finally:
        ck.close()
    params = {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_leaves_with_path(state["params"])}
    return step, params, host


def dump(path):
    con = sqlite3.connect(path)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


@needs_8
@pytest.mark.slow
def test_two_process_skill1_equals_one_process(tiny_model, tmp_path):  # noqa: F811
    from skillax import modes

    # kill: process 1 is killed in step 1 (after step 0's checkpoint and export); process 0
    # must exit with status 3 and a clear error at once. Then both restart and resume from
    # step 0's checkpoint. The reference runs both steps in one go, meanwhile.
    import threading
    import time

    procs = launch(tmp_path / "two", "skill1", tiny_model)
    killed = {}

    def kill_in_step_1():
        skills, deadline = tmp_path / "two" / "run" / "skills", time.monotonic() + 400
        while not skills.is_dir() and time.monotonic() < deadline and procs[1].poll() is None:
            time.sleep(0.2)
        time.sleep(1.0)
        t0 = time.monotonic()
        procs[1].kill()
        try:
            procs[0].wait(timeout=60)
        finally:
            killed["exit_s"] = time.monotonic() - t0

    killer = threading.Thread(target=kill_in_step_1, daemon=True)
    killer.start()
    try:
        (tmp_path / "one").mkdir()
        modes.run(run_config(tiny_model), str(tmp_path / "one" / "run"))
        killer.join(timeout=400)
        procs[0].wait(timeout=60)
        waited = killed["exit_s"]
    finally:
        (_, _, err), _ = finish(procs, timeout=5)
    print(f"process 0 exited {waited:.1f} s after process 1 was killed")
    assert procs[0].returncode == 3 and waited < 30, err[-3000:]
    assert "skillax: process 0: DistributedError:" in err and "another process died or cannot be reached" in err
    lines = (tmp_path / "two" / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [0]
    results = finish(launch(tmp_path / "two", "skill1", tiny_model), timeout=600)
    for rc, out, err in results:
        assert rc == 0, err[-4000:]
        assert "resumed from checkpoint: next step 1" in out
    one, two = tmp_path / "one" / "run", tmp_path / "two" / "run"
    m1, m2 = metrics(one), metrics(two)
    assert [m["step"] for m in m1] == [0, 1] and m1[0]["rows"] >= 4 and m1[0]["retrieval_rate"] == 1.0
    assert all(m["grad_norm"] > 0 and m["update_skipped"] == 0 for m in m1)          # two real updates
    for a, b in zip(m1, m2, strict=True):
        assert set(a) == set(b)
        for k in a:
            assert b[k] == pytest.approx(a[k], rel=1e-5, abs=1e-6), k
    assert dump(one / "library.sqlite") == dump(two / "library.sqlite")
    assert (one / "library.sqlite").read_bytes() == (two / "library.sqlite").read_bytes()
    assert not (two / ".staging-p1" / "library.sqlite").samefile(two / ".staging" / "library.sqlite")
    assert sorted(p.name for p in (one / "skills").iterdir()) == sorted(p.name for p in (two / "skills").iterdir())
    e1, e2 = json.loads((one / "eval.json").read_text()), json.loads((two / "eval.json").read_text())
    for cond in ("with_library", "without_library"):
        e1[cond]["valid_seen"].pop("seconds"), e2[cond]["valid_seen"].pop("seconds")
    assert e1 == e2 and e1["with_library"]["valid_seen"]["n"] == 2
    s1, p1, h1 = checkpoint(one)
    s2, p2, h2 = checkpoint(two)
    assert s1 == s2 == 1 and h1 == h2
    diffs = {k: float(np.abs(p2[k] - v).max()) for k, v in p1.items()}
    print("max |2-process - 1-process| over params:", max(diffs.values()))
    assert set(p1) == set(p2) and all(d <= 1e-6 for d in diffs.values()), diffs
