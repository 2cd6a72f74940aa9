"""EnvPool: crashes, exceptions and timeouts end one episode as failed; the others go on."""
import time

import pytest

from skillax.agents.envs import EnvSpec, Task
from skillax.agents.envs.runner import EnvPool

from ._toy_env import ToyEnv

SPEC = EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 5})


def _tasks(n, **payload):
    return [Task(f"t{i}", "toy", "toy", "reach the end", payload=dict(payload)) for i in range(n)]


def test_in_process_pool_exceptions_and_skips():
    with EnvPool(SPEC, n_workers=0) as pool:
        obs = pool.reset_batch(_tasks(3))
        assert [o for o, _ in obs] == ["t0: start", "t1: start", "t2: start"]
        res = pool.step_batch(["go", "raise", "win"])
        assert res[0][0] == "t0: t=1 trace=go" and res[0][2] is False
        assert res[1][2] is True and res[1][3]["failed"] and "ValueError: boom" in res[1][3]["fail_reason"]
        assert res[2][1] == 1.0 and res[2][2] is True and res[2][3]["won"]
        res = pool.step_batch(["go", None, None])
        assert res[0][0] == "t0: t=2 trace=go,go"
        assert res[1][3]["skipped"] and res[2][3]["skipped"] and res[2][1] == 0.0
        assert pool.done == [False, True, True]
        with pytest.raises(ValueError, match="2 actions for 3"):
            pool.step_batch(["go", "go"])


def test_step_cap_marks_truncated():
    with EnvPool(SPEC, n_workers=0, max_steps=2) as pool:
        pool.reset_batch(_tasks(1))
        assert pool.step_batch(["go"])[0][2] is False
        obs, _, done, info = pool.step_batch(["go"])[0]
        assert done and info["truncated"] and not info["won"]


def test_crash_ends_one_episode_others_continue():
    with EnvPool(SPEC, n_workers=3, step_timeout_s=30) as pool:
        first = pool.reset_batch(_tasks(3))
        pids = {info["pid"] for _, info in first}
        assert len(pids) == 3  # one process per slot
        res = pool.step_batch(["go", "crash", "go"])
        assert res[1][2] is True and res[1][3]["failed"]
        assert "worker process died (exit code 3)" in res[1][3]["fail_reason"]
        assert [r[0] for r in (res[0], res[2])] == ["t0: t=1 trace=go", "t2: t=1 trace=go"]
        res = pool.step_batch(["go", "go", "win"])
        assert res[0][0] == "t0: t=2 trace=go,go" and res[1][3]["skipped"] and res[2][3]["won"]
        assert pool.restarts == 1
        # The restarted worker serves the next batch.
        again = pool.reset_batch(_tasks(3))
        assert [o for o, _ in again] == ["t0: start", "t1: start", "t2: start"]


def test_crash_with_shared_worker_replays_the_other_episodes():
    with EnvPool(SPEC, n_workers=1, step_timeout_s=30) as pool:
        pool.reset_batch(_tasks(3))
        pool.step_batch(["go", "go", "go"])
        res = pool.step_batch(["go", "crash", "go"])
        assert res[1][3]["failed"]
        # slots 0 and 2 lived in the killed process; their state was restored by replay
        assert res[0][0] == "t0: t=2 trace=go,go" and res[2][0] == "t2: t=2 trace=go,go"
        res = pool.step_batch(["win", None, "go"])
        assert res[0][0] == "t0: t=3 trace=go,go,win" and res[0][3]["won"]
        assert res[2][0] == "t2: t=3 trace=go,go,go"


def test_crash_during_reset():
    tasks = _tasks(2)
    tasks[1].payload["crash_on_reset"] = True
    with EnvPool(SPEC, n_workers=2) as pool:
        out = pool.reset_batch(tasks)
        assert out[0][0] == "t0: start" and not out[0][1].get("failed")
        assert out[1][1]["failed"] and "exit code 7" in out[1][1]["fail_reason"]
        assert pool.step_batch(["win", "go"])[0][3]["won"]


def test_step_timeout_is_honoured():
    with EnvPool(SPEC, n_workers=2, step_timeout_s=1.0) as pool:
        pool.reset_batch(_tasks(2))
        t0 = time.monotonic()
        res = pool.step_batch(["hang", "go"])
        elapsed = time.monotonic() - t0
        assert res[0][3]["failed"] and "timeout: step took longer than 1 s" in res[0][3]["fail_reason"]
        assert res[1][0] == "t1: t=1 trace=go" and not res[1][2]
        assert elapsed >= 1.0          # it waited for the timeout (a lower bound, not a speed claim)


def test_worker_killed_while_idle_is_restored():
    import os
    import signal

    with EnvPool(SPEC, n_workers=2) as pool:
        pool.reset_batch(_tasks(2))
        res = pool.step_batch(["go", "go"])
        pid = res[0][3]["pid"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pool._workers[0].proc.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        res = pool.step_batch(["go", "go"])
        assert res[0][0] == "t0: t=2 trace=go,go" and res[0][3]["pid"] != pid and not res[0][2]
        assert res[1][0] == "t1: t=2 trace=go,go" and pool.restarts == 1


def test_async_submit_and_poll_while_another_episode_hangs():
    """A hanging worker holds up only its own episode: the others' results arrive at once,
    the hung one fails at its timeout (counted)."""
    with EnvPool(SPEC, n_workers=2, step_timeout_s=1.0) as pool:
        pool.start_batch(_tasks(2))
        got = {}
        while len(got) < 2:
            got.update(pool.poll(None))
        assert got[0][0] == "t0: start" and got[1][3]["step"] == 0
        t0 = time.monotonic()
        pool.submit({0: "hang", 1: "go"})
        with pytest.raises(ValueError, match="pending"):
            pool.submit({1: "go"})
        first = pool.poll(None)
        assert list(first) == [1] and first[1][0] == "t1: t=1 trace=go"
        assert time.monotonic() - t0 < 0.9 and pool.in_flight == {0}
        pool.submit({1: "win"})
        got = {}
        while len(got) < 2:
            got.update(pool.poll(None))
        assert got[1][3]["won"] and got[0][3]["failed"] and "timeout" in got[0][3]["fail_reason"]
        assert pool.failed_episodes == 1 and pool.restarts == 1 and pool.in_flight == set()
        pool.submit({0: "go"})  # finished slots answer with their last result, skipped
        assert pool.poll(0)[0][3]["skipped"]


def test_resolve_workers(monkeypatch):
    from skillax.agents.envs.runner import available_cores, resolve_workers

    assert resolve_workers(0) == 0 and resolve_workers(3) == 3 and resolve_workers("4") == 4
    auto = max(1, available_cores() - 1)
    assert resolve_workers("auto") == auto == resolve_workers(-1)
    assert resolve_workers("auto", n_episodes=1) == 1
    monkeypatch.setenv("SKILLAX_ENV_WORKERS", "1")
    assert resolve_workers("auto") == 1
    for bad in (-2, "many", 1.5, True):
        with pytest.raises(ValueError, match="n_workers"):
            resolve_workers(bad)


def test_group_placement_keeps_a_task_together_and_drops_stale_envs():
    tasks = [Task(t, "toy", "toy", "g") for t in ("a", "b", "a", "b", "c", "a")]
    with EnvPool(SPEC, n_workers=3) as pool:
        # sorted by first appearance (a a a b b c), cut into runs of 2: [a a] [a b] [b c]
        assert pool.place(tasks) == [0, 1, 0, 2, 2, 1]
        assert EnvPool(SPEC, n_workers=3, placement="round_robin").place(tasks) == [0, 1, 2, 0, 1, 2]
        first = pool.reset_batch(tasks)
        pids = [info["pid"] for _, info in first]
        assert pids[0] == pids[2] and pids[5] == pids[1] and pids[3] == pids[4] and len(set(pids)) == 3
        res = pool.step_batch(["go"] * 6)
        assert [r[0] for r in res] == [f"{t.id}: t=1 trace=go" for t in tasks]
        # a smaller batch moves slots: the workers close environments they no longer hold
        again = pool.reset_batch(tasks[:2])
        assert [info["pid"] for _, info in again] == [pids[0], pids[1]]
        assert pool.step_batch(["go", "win"])[1][3]["won"]
