"""Executor play SFT with skills in context: the injected block equals the play prompt's,
episodes keep their skills, the own-type skill never comes from the episode's own game, rows
past the budget fall back to no skills."""
from skillax.agents.agent_loop import PlayConfig, build_play_prompt
from skillax.agents.envs import EnvSpec, Task
from skillax.agents.envs import experts
from skillax.agents.envs.experts import ExpertRecord
from skillax.agents.envs.runner import EnvPool
from skillax.methods.skillos import executor_sft as es
from tests.agents._toy_env import ToyEnv
from tests.methods.test_skillos_groups import alf

PC = PlayConfig(max_admissible=8, max_skills=3, max_skill_chars=800)
HEAT = [alf("t", f"pick_heat_then_place_in_recep-Egg-None-Fridge-{i}", "heat some egg and put it in fridge")
        for i in range(3)]
COOL = [alf("t", f"pick_cool_then_place_in_recep-Apple-None-Fridge-{i}", "cool some apple and put it in fridge")
        for i in range(2)]
WHERE = {HEAT[0].id: "shelf", HEAT[1].id: "desk", HEAT[2].id: "cabinet", COOL[0].id: "sofa", COOL[1].id: "bed"}


def actions(t):
    o = t.attributes["object"]
    v, a = ("heat", "microwave") if "heat" in t.family else ("cool", "fridge")
    return [f"go to {WHERE[t.id]} 1", f"take {o} 1 from {WHERE[t.id]} 1", f"go to {a} 1", f"{v} {o} 1 with {a} 1",
            "go to fridge 1", f"move {o} 1 to fridge 1"]


def episodes():
    out = []
    for t in HEAT + COOL:
        msgs = build_play_prompt(t.goal, "You are in a kitchen.", [], ["go to fridge 1", "look"], [], 0, PC)
        out.append((t, actions(t), [msgs + [{"role": "assistant", "content": "<think>x</think><action>look</action>"}]]))
    return out


def test_with_skills_equals_the_play_prompt():
    goal = "heat some egg and put it in fridge"
    args = (goal, "obs", [("o1", "look")], ["look", "go to fridge 1"])
    plain = build_play_prompt(*args, [], 1, PC) + [{"role": "assistant", "content": "a"}]
    skills = ["heat: How to heat.\n1. Go to the microwave.", "other: x"]
    got = es.with_skills(plain, goal, skills, PC)
    assert got[:2] == build_play_prompt(*args, skills, 1, PC) and got[2] == plain[2]
    assert plain[1]["content"].count("Skills:") == 0                 # the input is not modified
    assert es.with_skills(plain, goal, [], PC) == plain
    try:
        es.with_skills(plain, "another goal", skills, PC)
        raise AssertionError("expected ValueError")
    except ValueError:
        pass


def test_replay_episodes_groups_transcripts_by_game(monkeypatch):
    tasks = [Task(f"t{i}", "toy", "toy", f"goal {i}") for i in range(3)]
    acts = {"t0": ["go", "win"], "t1": ["win"], "t2": ["go", "go", "win"]}
    monkeypatch.setattr(experts, "expert_trajectory", lambda t: ExpertRecord(
        t.id, t.goal, [("", a) for a in acts[t.id]], "", won=True, source="test"))
    spec = EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 4})
    with EnvPool(spec, n_workers=0, max_steps=4) as pool:
        eps, stats = es.replay_episodes(tasks, spec, PlayConfig(), 4, pool=pool)
    assert [(t.id, a, len(trs)) for t, a, trs in eps] == [("t0", ["go", "win"], 2), ("t1", ["win"], 1),
                                                          ("t2", ["go", "go", "win"], 3)]
    assert stats == {"tasks": 3, "experts_won": 3, "steps": 6}
    assert all(m["role"] in ("system", "user", "assistant") for _, _, trs in eps for tr in trs for m in tr)


def test_assign_skills_own_type_from_other_games_only():
    eps = episodes()
    got = es.assign_skills(eps, 1.0, 1.0, 3, 3, seed=0)
    assert got == es.assign_skills(eps, 1.0, 1.0, 3, 3, seed=0)        # deterministic
    for (t, _, _), (skills, own) in zip(eps, got):
        mine = [s for s in skills if s.startswith(t.family.replace("_", "-") + ":")]
        assert own and len(mine) == 1 and 1 <= len(skills) <= 3
        others = [WHERE[u.id] for u in (HEAT if "heat" in t.family else COOL) if u.id != t.id]
        assert all(w in mine[0] for w in others) and WHERE[t.id] not in mine[0]    # never its own game
        assert "egg" not in mine[0] and "apple" not in mine[0]           # task-type level
        assert not any(s.startswith("alfworld-") for s in skills)         # hand-written skills never used
    none = es.assign_skills(eps, 1.0, 0.0, 3, 3, seed=0)                  # other types only
    for (t, _, _), (skills, own) in zip(eps, none):
        assert not own and skills and not any(s.startswith(t.family.replace("_", "-")) for s in skills)
    assert es.assign_skills(eps, 0.0, 1.0, 3, 3, seed=0) == [([], False)] * 5
    half = es.assign_skills(eps, 0.5, 0.5, 3, 3, seed=1)
    assert half == es.assign_skills(eps, 0.5, 0.5, 3, 3, seed=1)


def test_contrast_skills_gives_every_game_its_own_skill_others_only_and_none():
    eps = episodes()
    reps, got = es.contrast_skills(eps, 3, 3, seed=4)
    assert [t.id for t, _, _ in reps] == [t.id for t, _, _ in eps] * 3
    assert got[:5] == es.assign_skills(eps, 1.0, 1.0, 3, 3, seed=4)      # (a) own type's skill among others'
    assert got[5:10] == es.assign_skills(eps, 1.0, 0.0, 3, 3, seed=5)    # (b) other types' only
    assert got[10:] == [([], False)] * 5                                 # (c) none
    for (t, _, _), (skills, own) in zip(reps, got):
        mine = [s for s in skills if s.startswith(t.family.replace("_", "-") + ":")]
        assert own == bool(mine) and len(mine) <= 1


def test_build_transcripts_counts_tokens_and_keeps_rows_in_budget():
    eps = episodes()
    assign = es.assign_skills(eps, 1.0, 1.0, 3, 3, seed=0)
    count = lambda m: sum(len(x["content"].split()) for x in m)   # noqa: E731  (words as tokens)
    base = [count(tr) for _, _, trs in eps for tr in trs]
    rows, st = es.build_transcripts(eps, assign, PC, count, 10 ** 6)
    assert st["transcripts"] == st["with_skills"] == 5 and st["over_budget"] == 0
    assert st["mean_added_tokens"] == sum(count(r) for r in rows) / 5 - sum(base) / 5
    assert st["max_tokens"] == max(count(r) for r in rows)
    rows, st = es.build_transcripts(eps, assign, PC, count, max(base))   # no skill block fits
    assert st["over_budget"] == 5 and st["with_skills"] == 0 and st["mean_added_tokens"] == 0
    assert rows == [tr for _, _, trs in eps for tr in trs] and st["episodes_with_skills"] == 5


def test_play_families_keeps_only_the_named_task_types():
    import pytest
    from skillax.methods.skillos.train import play_family_tasks
    tasks = HEAT + COOL
    assert play_family_tasks(tasks, "") == tasks                      # "" = every type, same order
    assert play_family_tasks(tasks, " pick_cool_then_place_in_recep ") == COOL
    both = "pick_cool_then_place_in_recep,pick_heat_then_place_in_recep"
    assert play_family_tasks(tasks, both) == tasks
    with pytest.raises(ValueError, match="pick_clean_then_place_in_recep"):  # no such task in the split
        play_family_tasks(tasks, "pick_clean_then_place_in_recep")


def test_own_skill_places_reads_only_the_episodes_own_type_skill():
    """sft.play_search: the searching expert follows the places of the skill of the episode's
    own task type; other types' skills in the same prompt change nothing."""
    from skillax.methods.skillos.executor_sft import own_skill_places

    task = Task("g1", "alfworld", "pick_heat_then_place_in_recep", "put a hot egg in fridge", split="valid_train")
    heat = ("pick-heat-then-place-in-recep: How to do pick heat then place in recep tasks.\n"
            "1. Find the X. In earlier games it was in or on the countertop, fridge or cabinet. Go there.")
    cool = ("pick-cool-then-place-in-recep: How to do pick cool then place in recep tasks.\n"
            "1. Find the X. In earlier games it was in or on the diningtable. Go there.")
    assert own_skill_places(task, [cool, heat]) == [["countertop", "fridge", "cabinet"]]
    assert own_skill_places(task, [cool]) == []
    # the prompt's per-skill cap cuts the places sentence: nothing to follow (not a cut list)
    assert own_skill_places(task, [heat], max_chars=len(heat) - 12) == [[]]
    assert own_skill_places(task, [heat], max_chars=len(heat)) == [["countertop", "fridge", "cabinet"]]
    assert own_skill_places(task, []) == []


def test_play_contrast_needs_play_search():
    import pytest

    from skillax.configs import get
    from skillax.methods.skillos.train import executor_warmstart

    cfg = get("skillos_alfworld_learning")
    cfg.sft.play_search, cfg.sft.play_contrast = False, True
    with pytest.raises(ValueError, match="play_contrast needs sft.play_search"):
        executor_warmstart(cfg, None, None)        # before any game is loaded or planned
