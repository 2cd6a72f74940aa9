"""Skill-alpha under the learning campaign's contract (BRIEF.md, issue 18): evaluation records
per (condition, split) in chunks with failures counted as losses, the RL clock's deadline,
and -- with a tiny random Llama (SmolLM2's tokenizer) on real TextWorld games -- a warm start
saved by an SFT-only run (``steps = 0``) and loaded by an RL run that skips both SFT stages,
edits the same stream with the same worker, and resumes from its own checkpoint first; a run
killed in RL step 0 restarts from its own SFT result (issue 23, item 5)."""
import json

import jax
import numpy as np
import pytest

from skillax.agents.agent_loop import Trajectory
from skillax.agents.envs.base import Task
from skillax.methods.skill_alpha.evaluate import eval_conditions, evaluate_conditions
from skillax.skills.rules import make_rule_body, with_rules
from skillax.skills.skill_md import make_skill, parse_skill_md
from tests.methods.test_skill_alpha_integration import tiny_config, tiny_model  # noqa: F401 (fixture)
from tests.methods.test_skills_wiring import assert_agent_skills


class FakePlayer:
    """A worker's games: won iff the skill context contains 'magic'; 'crash' games fail."""

    def __init__(self):
        self.chunks = []

    def play(self, jobs):
        self.chunks.append(len(jobs))
        out = []
        for ctx, t in jobs:
            tr = Trajectory(t.id, t.goal)
            tr.failed = "crash" in t.id
            tr.won = "magic" in ctx and not tr.failed
            out.append(tr)
        return out


def test_eval_conditions_parse():
    from skillax.methods.skill_alpha.config import skill_alpha

    c = skill_alpha()
    assert eval_conditions(c) == ("no_skill", "with_skill")
    c.eval.handwritten_dir = "benchmarks/learning/handwritten_skills"
    assert eval_conditions(c) == ("no_skill", "with_skill", "handwritten")
    assert eval_conditions(c, loaded_warm_start=True) == ("with_skill",)   # the rl arm's default
    c.eval.conditions = "with_skill"
    assert eval_conditions(c) == ("with_skill",)
    c.eval.conditions = "with_skill,oracle"
    with pytest.raises(ValueError, match="unknown"):
        eval_conditions(c)
    c.eval.conditions, c.eval.handwritten_dir = "handwritten", ""
    with pytest.raises(ValueError, match="handwritten_dir"):
        eval_conditions(c)


def test_evaluate_conditions_records_chunks_and_failures(tmp_path):
    from skillax.evaluation import read_records

    tasks = {"valid_unseen": [Task(f"valid_unseen/g{i}", "alfworld", "pick_and_place_simple", "put x", split="valid_unseen")
                              for i in range(3)] + [Task("valid_unseen/crash", "alfworld", "look_at_obj_in_light", "look",
                                                         split="valid_unseen")],
             "valid_seen": [Task("valid_seen/g0", "alfworld", "pick_heat_then_place_in_recep", "heat", split="valid_seen")]}
    good = with_rules(make_skill("s", "d"), make_rule_body(["Use magic."]))
    sc = FakePlayer()
    out = evaluate_conditions(sc, tasks, {"no_skill": None, "with_skill": good}, tmp_path, batch_size=4)
    assert sc.chunks == [4, 4, 2]                      # 10 episodes in chunks of 4
    s = out["summaries"]
    assert s["with_skill__valid_unseen"]["successes"] == 3 and s["with_skill__valid_unseen"]["n"] == 4
    assert s["with_skill__valid_unseen"]["failed"] == 1          # the crashed game: a loss, not dropped
    assert s["no_skill__valid_unseen"]["successes"] == 0 and s["with_skill__valid_seen"]["success"] == 1.0
    assert out["paired"]["with_skill__valid_unseen"]["delta"] == pytest.approx(0.75)
    assert out["paired"]["with_skill__valid_unseen"]["arm_only"] == 3
    recs = read_records(tmp_path / "eval" / "with_skill__valid_unseen.jsonl")
    assert [r.won for r in recs] == [True, True, True, False] and recs[3].failed
    assert {p.name for p in (tmp_path / "eval").iterdir()} == {
        f"{c}__{sp}.jsonl" for c in ("no_skill", "with_skill") for sp in ("valid_unseen", "valid_seen")}
    sc = FakePlayer()
    evaluate_conditions(sc, tasks, {"with_skill": good}, tmp_path / "b", batch_size=0)
    assert sc.chunks == [5]                            # 0 = all at once


def test_train_until_unix_in_the_past_runs_no_step(monkeypatch, tmp_path):
    import time

    import ml_collections

    from skillax.methods.skill_alpha import loop
    from skillax.methods.skill_alpha.evidence_stream import EvidenceStream, StreamItem
    from skillax.methods.skill_alpha.unit import UnitConfig

    stream = EvidenceStream([StreamItem(0, "trajectory", "f", ("u",), ("a",))], {})
    monkeypatch.setattr(loop, "run_units", lambda *a: pytest.fail("no RL step may start after the deadline"))
    monkeypatch.setattr("skillax.rl.plot.plot", lambda *a, **k: None)
    eng = type("E", (), {"policy_sampler": lambda self, t: None, "tokenizer": None,
                      "save": lambda self, s, h: pytest.fail("no save")})()
    cfg = ml_collections.ConfigDict(dict(steps=3, checkpoint_every=1, max_train_minutes=0.0,
                                         train_until_unix=time.time() - 1, rl=dict(temperature=1.0),
                                         unit=dict(zero_variance="keep")))
    out = loop.train(cfg, eng, type("St", (), {"stream": stream, "scorer": None})(), [], None, UnitConfig(), 0,
                     tmp_path)
    assert out["steps_run"] == 0 and "deadline" in out["stop_reason"]


def _arm(model, work, root, **over):
    from skillax.methods.skill_alpha.loop import run

    return run(arm_config(model, **over), work)


def arm_config(model, **over):
    """The campaign arms' tiny config with ``over`` (dotted keys) applied."""
    c = tiny_config(model)
    # play SFT and editor SFT at the same shapes and rate: one compiled SFT step for both
    c.sft.play_steps, c.sft.play_batch_size, c.sft.play_max_len, c.sft.n_tasks, c.sft.play_lr = 1, 4, 512, 2, 1e-4
    c.sft.steps, c.sft.batch_size, c.sft.episodes, c.sft.max_len, c.sft.lr = 1, 4, 2, 512, 1e-4
    c.eval.splits = "valid,test"               # TextWorld's held-out splits
    c.eval.n_tasks = 1
    c.eval.batch_size = 2
    c.env.tw_games_per_family = 3
    c.unit.group_size = 2
    c.train.micro_batch = 2
    for k, v in over.items():
        node = c
        *path, last = k.split(".")
        for p in path:
            node = node[p]
        node[last] = v
    c.rl.skip_no_signal = False   # a tiny random policy wins nothing: keep its updates (the mechanics under test)
    return c


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def test_warm_start_save_then_load_and_resume(tiny_model, tmp_path):  # noqa: F811
    from skillax.methods.common.warmstart import WarmStart
    from skillax.rl.checkpoint import Checkpointer

    ws, a, b = tmp_path / "ws", tmp_path / "sft", tmp_path / "rl"
    hand = str(tmp_path / "hand")
    (tmp_path / "hand" / "x").mkdir(parents=True)
    (tmp_path / "hand" / "x" / "SKILL.md").write_text("---\nname: x\ndescription: d (do x).\n---\n1. Look.\n2. Go.\n")
    # arm "sft": SFT stages, warm start saved, no RL, eval no_skill + with_skill + handwritten on two splits
    ra = _arm(tiny_model, a, tmp_path, steps=0, **{"warmstart.save_dir": str(ws), "eval.handwritten_dir": hand})
    assert "play_sft" in ra and "edit_sft" in ra and "rl" not in ra and not (a / "metrics.jsonl").exists()
    assert WarmStart(ws).exists() and (a / "sft_data.jsonl").exists()
    names = {p.name for p in (a / "eval").iterdir()}
    assert names == {f"{c}__{s}.jsonl" for c in ("no_skill", "with_skill", "handwritten") for s in ("valid", "test")}
    ev = json.loads((a / "eval.json").read_text())
    assert set(ev["summaries"]) == {n[:-6] for n in names} and ev["skill_chars"]["handwritten"] > 0
    assert (a / "skill" / "household-tasks" / "SKILL.md").exists()
    assert_agent_skills(a / "skill", ["household-tasks"])                 # our gate + skills_ref
    meta = parse_skill_md((a / "skill" / "household-tasks" / "SKILL.md").read_text()).metadata
    assert (meta["method"], meta["run-id"]) == ("skill_alpha", "sft") and "step" not in meta   # no RL step
    # the sft arm cut and re-run: it reloads its own warm start (no SFT again, WS untouched)
    done = (ws / "DONE.json").read_text()
    ra2 = _arm(tiny_model, a, tmp_path, steps=0, **{"warmstart.save_dir": str(ws), "eval.handwritten_dir": hand})
    assert ra2["warmstart"]["own"] and "play_sft" not in ra2 and "edit_sft" not in ra2
    assert (ws / "DONE.json").read_text() == done and len(ra2["eval"]["summaries"]) == 6
    # arm "rl": loads the warm start (no SFT stage), one RL step, eval with_skill only
    rb = _arm(tiny_model, b, tmp_path, steps=1, **{"warmstart.load_dir": str(ws)})
    assert rb["warmstart"]["loaded_from"] == str(ws) and not rb["warmstart"]["own"]
    assert "play_sft" not in rb and "edit_sft" not in rb
    assert not (b / "sft_data.jsonl").exists() and rb["setting"]["cached"]
    assert (b / "evidence_stream.json").read_bytes() == (a / "evidence_stream.json").read_bytes()
    with Checkpointer(a / "frozen" / "worker", max_to_keep=1) as ca, \
            Checkpointer(b / "frozen" / "worker", max_to_keep=1) as cb:
        wa, wb = ca.restore(0, target=None)[0], cb.restore(0, target=None)[0]
    assert all(np.array_equal(x, y) for x, y in zip(_leaves(wa), _leaves(wb)))     # the same frozen worker
    assert rb["rl"]["steps_run"] == 1 and len((b / "metrics.jsonl").read_text().splitlines()) == 1
    assert_agent_skills(b / "skill", ["household-tasks"])
    meta = parse_skill_md((b / "skill" / "household-tasks" / "SKILL.md").read_text()).metadata
    assert (meta["method"], meta["run-id"], meta["step"]) == ("skill_alpha", "rl", "0")    # after RL step 0
    assert all(v == "z0" or v.startswith("chunk ") for k, v in meta.items() if k.startswith("rule-"))
    assert {p.name for p in (b / "eval").iterdir()} == {"with_skill__valid.jsonl", "with_skill__test.jsonl"}
    # re-run of the rl arm: its own checkpoint wins (a missing load_dir is never read), no step left
    rc = _arm(tiny_model, b, tmp_path, steps=1, **{"warmstart.load_dir": str(tmp_path / "gone"),
                                                   "eval.conditions": "with_skill"})
    assert "warmstart" not in rc and "rl" not in rc and "eval" in rc


@pytest.mark.slow
def test_crash_in_rl_step0_skips_sft_on_restart(tiny_model, tmp_path, capsys, monkeypatch):  # noqa: F811
    """Issue 23, item 5 (``tests.methods._interrupt.crash_restart_compare``): a run killed at the
    start of RL step 0's units (after both SFT stages; Skill-alpha's frozen worker samples before
    RL, for the evidence stream, with prompts as long as the editor's, so no sampler budget fails
    in RL step 0 only: the kill is simulated, ``tests.methods._interrupt.Killed``) and started
    again loads ``<workdir>/warmstart/`` instead of repeating the SFT, and its RL step 0 gives the
    uninterrupted run's parameters bit for bit. The arms' config and tiny model above: the
    compiled programs are the campaign test's."""
    from skillax.methods.skill_alpha import loop
    from tests.methods._interrupt import Killed, crash_restart_compare, run_killed

    def make_cfg():
        return arm_config(tiny_model, steps=1, **{"eval.conditions": "none", "infer.enabled": False})

    def crash(cfg, work):
        def killed(*a, **k):
            raise Killed("killed in RL step 0")
        with monkeypatch.context() as mp:
            mp.setattr(loop, "run_units", killed)
            assert isinstance(run_killed(loop.run, cfg, work), Killed)
    crash_restart_compare(loop.run, make_cfg, tmp_path, capsys, "edit SFT:", crash=crash)
