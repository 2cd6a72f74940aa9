"""Skill1 SFT data: skills shown in a seeded fraction of the play transcripts (another game of
the same type, sometimes an irrelevant one), on the sequential and the pooled replay alike,
and the distil / query demonstrations built from expert records."""

import pytest

from skillax.agents.agent_loop import PlayConfig
from skillax.agents.envs import EnvSpec, Task
from skillax.agents.envs import experts
from skillax.agents.envs.experts import ExpertRecord
from skillax.agents.envs.runner import EnvPool
from skillax.methods.common.play_sft import play_demonstrations
from skillax.methods.skill1 import lessons, sft_data
from tests.agents._toy_env import ToyEnv

COOL, HEAT = "pick_cool_then_place_in_recep", "pick_heat_then_place_in_recep"


def record(task_id, goal, obj="apple"):
    steps = [("start", "go to countertop 2"), (f"On the countertop 2, you see a {obj} 3.", f"take {obj} 3 from countertop 2"),
             (f"You pick up the {obj} 3.", "go to fridge 1"), ("The fridge 1 is closed.", f"cool {obj} 3 with fridge 1")]
    return ExpertRecord(task_id, goal, steps, f"You cool the {obj} 3 using the fridge 1.", won=True, source="test")


TASKS = [Task(f"c{i}", "alfworld", COOL, f"put a cool {o} in diningtable") for i, o in enumerate(["apple", "mug", "egg"])]
TASKS += [Task("h0", "alfworld", HEAT, "put a hot apple in fridge")]
RECS = {t.id: record(t.id, t.goal) for t in TASKS}


def test_expert_steps_pair_actions_with_the_observation_they_produced():
    steps, won = sft_data.expert_steps(RECS["c0"], max_steps=10)
    assert steps[0] == ("go to countertop 2", "On the countertop 2, you see a apple 3.")
    assert steps[-1] == ("cool apple 3 with fridge 1", "You cool the apple 3 using the fridge 1.") and won
    steps, won = sft_data.expert_steps(RECS["c0"], max_steps=2)
    assert len(steps) == 2 and not won                   # a truncated replay does not win


def test_skill_assignments_fraction_types_and_determinism():
    assert sft_data.skill_assignments(TASKS, RECS, 0.0, 0.25, 0, 30) == {}
    every = sft_data.skill_assignments(TASKS, RECS, 1.0, 0.0, 0, 30)
    assert set(every) == {"c0", "c1", "c2", "h0"}
    assert {k: v[0] for k, v in every.items()} == {"c0": "same_type", "c1": "same_type", "c2": "same_type",
                                                   "h0": "irrelevant"}      # h0 has no other heat game
    text = every["c0"][1]
    assert text.startswith("Use for cooling: chill it in the fridge. Example: put a cool ")
    assert "Example: put a cool apple in diningtable" not in text           # another game's skill
    assert not lessons.has_instance_numbers(text)
    irr = sft_data.skill_assignments(TASKS, RECS, 1.0, 1.0, 0, 30)
    assert irr["c0"][0] == "irrelevant" and irr["c0"][1].startswith("Use for heating")
    half = sft_data.skill_assignments(TASKS, RECS, 0.5, 0.25, 7, 30)
    assert half == sft_data.skill_assignments(TASKS, RECS, 0.5, 0.25, 7, 30)   # seeded
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        sft_data.skill_assignments(TASKS, RECS, 1.5, 0.0, 0, 30)


def test_extra_transcripts_distil_and_query_demos():
    out = sft_data.extra_transcripts(TASKS[:2], RECS, distil_demos=True, query_demos=True, max_steps=30)
    assert len(out) == 4 and [m[-1]["content"][:7] for m in out] == ["```json", "<query>", "```json", "<query>"]
    assert out[1][-1]["content"] == "<query>cooling: chill it in the fridge. apple, diningtable</query>"
    assert sft_data.extra_transcripts(TASKS, RECS, distil_demos=False, query_demos=False, max_steps=30) == []


def test_rerank_demos_rank_the_own_type_skill_first():
    """Campaign 10: the warm start put the other type's skill first in 89 of 90 two-candidate
    games; each demo ranks the demo skill of another game of the task's own type first."""
    from skillax.methods.skill1.prompts import RANK_PREFIX
    from skillax.skills.parsers import parse_rank

    tasks = TASKS + [Task("h1", "alfworld", HEAT, "put a hot egg in fridge")]
    recs = {t.id: record(t.id, t.goal) for t in tasks}
    demos = sft_data.rerank_demos(tasks, recs, seed=0, top_k=5, max_steps=30)
    assert len(demos) == 5                               # every won task has a same-type game and another type
    for task, demo in zip(tasks, demos):
        user, answer = demo[1]["content"], demo[-1]["content"]
        assert user.startswith(f"Your task is to: {task.goal}.") and answer.startswith(RANK_PREFIX)
        lines = [x for x in user.splitlines() if x.startswith("[")]
        assert len(lines) == 2                           # own type + the one other type (top_k allows 5)
        first = parse_rank(answer, len(lines)).permutation[0]
        own = "cooling" if task.family == COOL else "heating"
        assert lines[first].startswith(f"[{first + 1}] Use for {own}")
        assert f"Example: {task.goal}." not in user      # another game's skill, not the task's own goal
    positions = {parse_rank(d[-1]["content"], 2).permutation[0] for k in range(3)
                 for d in sft_data.rerank_demos(tasks, recs, seed=k, top_k=5, max_steps=30)}
    assert positions == {0, 1}                           # the own-type skill is shown at either position
    assert demos == sft_data.rerank_demos(tasks, recs, seed=0, top_k=5, max_steps=30)   # seeded
    assert sft_data.rerank_demos(TASKS, RECS, seed=0, top_k=5, max_steps=30)[-1][1]["content"].startswith(
        "Your task is to: put a cool egg")               # h0: no other heat game -> no demo
    twin = tasks + [Task("c9", "alfworld", COOL, "put a cool apple in diningtable")]   # c0's goal again
    recs9 = {t.id: record(t.id, t.goal) for t in twin}
    c0 = [d for k in range(8) for d in sft_data.rerank_demos(twin, recs9, seed=k, top_k=5, max_steps=30)
          if d[1]["content"].startswith("Your task is to: put a cool apple in diningtable.")]
    assert len(c0) == 16 and not any("Example: put a cool apple in diningtable." in d[1]["content"] for d in c0)
    with pytest.raises(ValueError, match="top_k >= 2"):
        sft_data.rerank_demos(tasks, recs, seed=0, top_k=1, max_steps=30)
    out = sft_data.extra_transcripts(tasks, recs, distil_demos=False, query_demos=False, max_steps=30,
                                     rerank=True, seed=0, top_k=5)
    assert out == demos


@pytest.mark.parametrize("n_workers", [0, 1])
def test_action_only_demos_write_no_think(monkeypatch, n_workers):
    """play.think=False: every play demonstration answers <action>X</action> under a prompt
    that asks for it, in one process and on a worker pool (the two replay paths)."""
    from skillax.agents.agent_loop import parse_action
    from skillax.methods.common.play import play_config

    spec = EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 4})
    tasks = [Task(f"t{i}", "toy", "toy", f"goal {i}") for i in range(2)]
    monkeypatch.setattr(experts, "expert_trajectory", lambda t: ExpertRecord(
        t.id, t.goal, [("", "go"), ("", "win")], "", won=True, source="test"))
    import ml_collections
    pc = play_config(ml_collections.ConfigDict({"play": dict(
        history_k=2, max_admissible=40, max_obs_chars=600, max_skill_chars=600, require_think=False, think=False)}))
    if n_workers:
        with EnvPool(spec, n_workers=n_workers, max_steps=4) as pool:
            demos, _ = play_demonstrations(tasks, spec, pc, max_steps=4, pool=pool)
    else:
        demos, _ = play_demonstrations(tasks, spec, pc, max_steps=4)
    assert [d[-1]["content"] for d in demos] == ["<action>go</action>", "<action>win</action>"] * 2
    assert all(d[1]["content"].endswith("Answer: <action>...</action>") and "<think>" not in d[0]["content"]
               for d in demos)
    assert parse_action(demos[0][-1]["content"], require_think=pc.require_think) == ("go", None)


@pytest.mark.parametrize("n_workers", [0, 1])
def test_play_transcripts_carry_the_assigned_skill(monkeypatch, n_workers):
    spec = EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 4})
    tasks = [Task(f"t{i}", "toy", "toy", f"goal {i}") for i in range(3)]
    monkeypatch.setattr(experts, "expert_trajectory", lambda t: ExpertRecord(
        t.id, t.goal, [("", "go"), ("", "win")], "", won=True, source="test"))
    skills = {"t1": "Use for toys. Example: goal 0."}
    hook = sft_data.skills_for({k: ("same_type", v) for k, v in skills.items()})
    pc = PlayConfig(require_think=True)
    if n_workers:
        with EnvPool(spec, n_workers=n_workers, max_steps=4) as pool:
            demos, _ = play_demonstrations(tasks, spec, pc, max_steps=4, pool=pool, skills_for=hook)
    else:
        demos, _ = play_demonstrations(tasks, spec, pc, max_steps=4, skills_for=hook)
    assert len(demos) == 6
    with_skill = [d[1]["content"].split("\n\n")[1] for d in demos if d[1]["content"].startswith("Task: goal 1")]
    assert with_skill == ["Skills:\n[1] Use for toys. Example: goal 0."] * 2
    assert all("Skills:" not in d[1]["content"] for d in demos if not d[1]["content"].startswith("Task: goal 1"))


def test_generic_level_reaches_the_distil_rerank_and_play_skill_demos():
    priors = sft_data.location_priors(TASKS, RECS)
    # c1/c2's records take an apple for a mug / egg goal: only the goal object's take counts
    assert priors == {"object": {"apple": ["countertop"]},
                      "task_type": {COOL: ["countertop"], HEAT: ["countertop"]}}
    extra = sft_data.extra_transcripts(TASKS, RECS, distil_demos=True, query_demos=False, max_steps=30,
                                       rerank=True, seed=0, top_k=3, priors=priors)
    distil = {t.id: m[-1]["content"] for t, m in zip(TASKS, extra)}
    assert '"action_lesson": "find the object X and take it; cool X with the fridge"' in distil["c0"]
    # c1's record takes an apple for its mug goal: named, not X (the mug falls back on its type's list)
    assert '"action_lesson": "take the apple; cool the apple with the fridge"' in distil["c1"]
    assert all("usually are (countertop)" in d for d in distil.values())
    reranks = extra[len(TASKS):]
    assert reranks and all("look for X where such objects usually are" in m[1]["content"] for m in reranks)
    assert "take the apple from the countertop" not in " ".join(m[1]["content"] for m in reranks)
    skill = sft_data.skill_assignments(TASKS, RECS, 1.0, 0.0, 0, 30, priors)["c0"][1]
    assert skill.startswith("Use for cooling") and "look for X where such objects usually are (countertop)" in skill
    assert sft_data.skill_assignments(TASKS, RECS, 1.0, 0.0, 0, 30)["c0"][1] != skill   # episode level differs


def test_sft_stage_passes_the_generic_level_on_and_refuses_an_unknown_one(monkeypatch):
    import types

    from skillax.config_defaults import skill1
    from skillax.methods.common import sft_warmstart
    from skillax.methods.skill1 import loop

    seen = {}

    def fake_warmstart(engine, cfg, tasks, pool=None, skills_for=None, extra_transcripts=()):
        seen["extra"], seen["skills_for"] = list(extra_transcripts), skills_for
        return {"updates": 0}

    monkeypatch.setattr(sft_warmstart, "play_sft_warmstart", fake_warmstart)
    monkeypatch.setattr(sft_data, "won_records", lambda tasks: dict(RECS))
    c = skill1()
    c.sft.n_tasks, c.sft.distil_demos, c.sft.skill_fraction, c.sft.irrelevant_fraction = 4, True, 1.0, 0.0
    c.sft.distil_level = "generic"
    pool = types.SimpleNamespace(n_workers=1)
    loop.sft_stage(None, c, TASKS, pool)
    assert '"action_lesson": "find the object X and take it; cool X with the fridge"' in seen["extra"][0][-1]["content"]
    assert "look for X where such objects usually are" in seen["skills_for"](TASKS[0])[0]
    c.sft.distil_level = "episode"
    loop.sft_stage(None, c, TASKS, pool)
    assert '"action_lesson": "take the apple from the countertop; cool the apple with the fridge"' in seen["extra"][0][-1]["content"]
    c.sft.distil_level = "type"
    with pytest.raises(ValueError, match="sft.distil_level must be 'episode' or 'generic'"):
        loop.sft_stage(None, c, TASKS, pool)
