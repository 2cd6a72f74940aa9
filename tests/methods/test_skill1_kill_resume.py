"""Issue 23, item 1: a Skill1 run interrupted anywhere in step 0 or its first checkpoint save
resumes to exactly the state of an uninterrupted run (metrics, library records, parameters).

Tiny random policy (SmolLM2 tokenizer) on real TextWorld games, real MiniLM and SQLite
library; in-process runs (the compiled programs are shared, ~5 s per run). A random policy
never wins, so step 0 stands in for "a won episode distilled a skill": after the real
library update it adds one skill (a real SQLite insert); ``rollout.threshold = -1`` makes
step 1 retrieve it (EMA, count, the skill in step 1's prompts). Before the fix, a run that
restarted after a kill in step 0 built on the dead run's ``library.sqlite``: step 0 already
retrieved the skill and admission merged a duplicate (``merges`` 1 where a clean run has 0).

Kills (one chain, each next run starting where the previous died): after step 0's library
update; in the first save (orbax's atomic rename never happens); at two random skillax calls
between the start of step 0 and the end of its save (seeded); between the checkpoint and the
commit of ``library.sqlite``.
"""

import dataclasses
import json
import random

import numpy as np
import pytest

from skillax.methods.common import host_state
from skillax.methods.skill1 import loop
from skillax.rl.checkpoint import Checkpointer
from skillax.skills.library import SkillLibrary
from tests.methods._interrupt import CallCounter, Killed, flatten, run_killed
from tests.methods.test_skill1_contract import skill1_tiny_config
from tests.methods.test_skillos_integration import tiny_model  # noqa: F401 (fixture)

VOLATILE = ("time", "elapsed", "tokens_per_s_sampling", "compile_count", "compile/builds", "compile/build_s")


def _config(model):
    c = skill1_tiny_config(model, steps=2)
    c.model.max_len = 1024
    c.train.length_buckets = (256, 384, 512, 768, 1024)
    c.rollout.threshold = -1.0          # every library skill is a candidate
    c.eval.n_tasks = -1                 # no evaluation: this test is about the RL state
    c.rl.skip_no_signal = False   # a tiny random policy wins nothing: keep its updates (the mechanics under test)
    return c


class Harness:
    """Patches the loop: the stand-in admission, an optional named kill, a call counter armed
    at the start of step 0 and disarmed after the first save."""

    def __init__(self, monkeypatch, kill: str | None = None, counter: CallCounter | None = None):
        self.kill, self.counter, self.saved = kill, counter, False
        real_rollout, real_update, real_save = loop.rollout, loop.update_library, loop.save_checkpoint
        real_commit = host_state.commit_bytes

        def rollout(*a, **k):
            if self.counter is not None and not self.saved:
                self.counter.arm()
            return real_rollout(*a, **k)

        def update_library(eps, library, step, *a, **k):
            counts = real_update(eps, library, step, *a, **k)
            if step == 0:
                library.add("take the passkey from the room", "Use for taking an object in the room.",
                            "Action lesson: take the object named in the goal.", step=step)
                counts["admitted"] += 1
            if self.kill == "after_library_update":
                raise Killed("after step 0's library update")
            return counts

        def save_checkpoint(*a, **k):
            if self.kill == "in_save":
                from orbax.checkpoint._src.path import atomicity

                async def finalize(self_):
                    raise Killed("in the first save, before orbax's atomic rename")
                monkeypatch.setattr(atomicity.AtomicRenameTemporaryPath, "finalize", finalize)
            out = real_save(*a, **k)
            if self.counter is not None:
                self.counter.disarm()
            self.saved = True
            return out

        def commit_bytes(dest, data):
            if self.kill == "before_commit" and str(dest).endswith(loop.LIBRARY_FILE):
                raise Killed("between the checkpoint and the library commit")
            return real_commit(dest, data)

        monkeypatch.setattr(loop, "rollout", rollout)
        monkeypatch.setattr(loop, "update_library", update_library)
        monkeypatch.setattr(loop, "save_checkpoint", save_checkpoint)
        monkeypatch.setattr(host_state, "commit_bytes", commit_bytes)


def _state(work):
    lines = [json.loads(x) for x in (work / "metrics.jsonl").read_text().splitlines() if x.strip()]
    by_step = {}
    for r in lines:
        by_step[r["step"]] = {k: v for k, v in r.items() if k not in VOLATILE and not k.startswith("time/")}
    with SkillLibrary(work / "library.sqlite") as lib:
        records = [dataclasses.astuple(r) for r in lib.records()]
    with Checkpointer(work / "checkpoints") as ck:
        step = ck.latest_step()
        state, host, _ = ck.restore_arrays()
    return by_step, records, step, state, host


@pytest.mark.slow
def test_skill1_kill_in_step0_and_first_save_resumes_exactly(tiny_model, tmp_path, monkeypatch):  # noqa: F811
    from skillax import modes

    cfg = _config(tiny_model)
    with monkeypatch.context() as mp:                      # the uninterrupted reference
        counter = CallCounter()
        Harness(mp, counter=counter)
        modes.run(cfg, str(tmp_path / "ref"))
    n_calls = counter.count
    assert n_calls > 100
    ref = _state(tmp_path / "ref")
    # one skill; both step-1 episodes retrieved and selected it: U 0.5 -> 0.475 -> 0.45125
    # (r = 0 twice), n 1 -> 3, no merge
    assert [(r[4], r[5], r[8]) for r in ref[1]] == [(pytest.approx(0.45125), 3, 0)]

    work = tmp_path / "run"
    rng = random.Random(23)
    kills = ["after_library_update", "in_save", rng.randint(1, n_calls), rng.randint(1, n_calls), "before_commit"]
    for kill in kills:
        with monkeypatch.context() as mp:
            counter = CallCounter(kill) if isinstance(kill, int) else None
            Harness(mp, kill=None if isinstance(kill, int) else kill, counter=counter)
            err = run_killed(modes.run, cfg, str(work))
        assert isinstance(err, Killed), (kill, err)
    if kills[-1] == "before_commit":    # checkpoint of step 0 written, library.sqlite not committed yet
        assert Checkpointer(work / "checkpoints").latest_step() == 0
    with monkeypatch.context() as mp:
        Harness(mp)
        modes.run(cfg, str(work))
    got = _state(work)
    assert got[0] == ref[0]                                  # metrics of steps 0 and 1
    assert got[1] == ref[1]                                  # library records
    assert got[2] == ref[2] == 1 and got[4] == ref[4]        # checkpoint step, host payload
    flat_ref, flat_got = (sorted(flatten(s).items()) for s in (ref[3], got[3]))
    assert [k for k, _ in flat_ref] == [k for k, _ in flat_got]
    for (k, a), (_, b) in zip(flat_ref, flat_got):
        np.testing.assert_array_equal(a, b, err_msg=k)

