"""sft.play_search for Skill-alpha's worker (methods.skill_alpha.play_search): the rule document
is made of every type's teacher rules as z_hand is made, rendered in the play prompt exactly as
the worker sees z at evaluation, never written from the episode's own game, and the searching
expert follows the places of the own type's rules only (real ALFWorld games, plans from the
planner cache copied here: no planner runs)."""
import pytest

from skillax.agents.agent_loop import build_play_prompt
from skillax.methods.skill_alpha import play_search as ps
from tests.conftest import SHARED, needs_shared
# the SkillOS executor-SFT tests' games: 3 Heat and 2 Cool, each object at its own WHERE place
from tests.methods.test_skillos_executor_sft import COOL, HEAT, WHERE
from tests.methods.test_skillos_executor_sft import actions as plan


def test_type_rules_are_the_teacher_skill_steps_tagged_as_z_hand():
    got = ps.type_rules(HEAT[0].family, [(HEAT[0], plan(HEAT[0])), (HEAT[1], plan(HEAT[1]))])
    assert got == [
        "pick-heat-then-place-in-recep, step 1: Find the X. In earlier games it was in or on the shelf or desk. "
        'Go there, open it if it is closed, and take it ("take X from ...").',
        'pick-heat-then-place-in-recep, step 2: Go to the microwave and heat the X ("heat X with microwave").',
        "pick-heat-then-place-in-recep, step 3: Go to the Y, open it if it is closed, and put the X there "
        '("move X to Y").']
    assert ps.type_rules(HEAT[0].family, []) == []
    assert ps.document_context(got[:2]) == "- [R1] " + got[0] + "\n- [R2] " + got[1]
    assert ps.document_context([]) == ""


def test_documents_hold_every_type_and_never_the_own_game():
    games = [(t, plan(t)) for t in HEAT + COOL]
    docs = ps.assign_documents(games, 1.0, 3, seed=0)
    assert docs == ps.assign_documents(games, 1.0, 3, seed=0)                    # deterministic
    for (t, _), (texts, own) in zip(games, docs):
        assert len(texts) == 6 and own and all(r in texts for r in own)
        assert [r.split(",")[0] for r in texts] == ["pick-cool-then-place-in-recep"] * 3 + \
                                                   ["pick-heat-then-place-in-recep"] * 3   # sorted types
        assert all(r.startswith(t.family.replace("_", "-") + ",") for r in own)
        mates = [u for u in (HEAT if "heat" in t.family else COOL) if u.id != t.id]
        assert all(WHERE[u.id] in own[0] for u in mates) and WHERE[t.id] not in own[0]   # never its own game
        assert "egg" not in " ".join(texts) and "apple" not in " ".join(texts)          # task-type level
    assert ps.assign_documents(games, 0.0, 3, seed=0) == [([], [])] * 5
    half = ps.assign_documents(games, 0.5, 3, seed=1)
    assert half == ps.assign_documents(games, 0.5, 3, seed=1) and ([], []) in half and any(d for d, _ in half)
    with pytest.raises(ValueError, match="play_skill_fraction"):
        ps.assign_documents(games, 1.5, 3, seed=0)
    with pytest.raises(ValueError, match="play_skill_games"):
        ps.assign_documents(games, 1.0, 0, seed=0)


# valid_train games with their planner plans (copied from the planner cache). COOL: the tomato
# is on countertop 1 of kitchen 14 (receptacles sort cabinet 1-8, coffeemachine 1, countertop 1,
# ..., stoveburner 1-4); PAN: the other Cool game (pan on stoveburner 4), so COOL's own rules say
# "stoveburner"; CUP: a Heat game (cup in sinkbasin 1), the only Heat game: its own rules are
# empty, the Heat rules in COOL's document say "sinkbasin".
COOL_ID = "valid_train/pick_cool_then_place_in_recep-Tomato-None-Microwave-14/trial_T20190907_024221_811233"
COOL_PLAN = ["go to countertop 1", "take tomato 1 from countertop 1", "go to fridge 1", "cool tomato 1 with fridge 1",
             "go to microwave 1", "open microwave 1", "move tomato 1 to microwave 1"]
PAN_ID = "valid_train/pick_cool_then_place_in_recep-Pan-None-DiningTable-11/trial_T20190908_204414_053313"
PAN_PLAN = ["go to stoveburner 4", "take pan 1 from stoveburner 4", "go to fridge 1", "cool pan 1 with fridge 1",
            "go to diningtable 1", "move pan 1 to diningtable 1"]
CUP_ID = "valid_train/pick_heat_then_place_in_recep-Cup-None-Shelf-1/trial_T20190906_230051_015449"
CUP_PLAN = ["go to sinkbasin 1", "take cup 2 from sinkbasin 1", "go to microwave 1", "heat cup 2 with microwave 1",
            "go to shelf 2", "move cup 2 to shelf 2"]


@pytest.fixture(scope="module")
def games():
    from skillax.agents.envs.alfworld import load_alfworld_tasks

    by_id = {t.id: t for t in load_alfworld_tasks(str(SHARED / "data" / "alfworld"), splits=["valid_train"])}
    return [by_id[COOL_ID], by_id[PAN_ID], by_id[CUP_ID]]


def _cfg():
    from skillax.methods.skill_alpha.config import skill_alpha
    return skill_alpha("experience")


@needs_shared
def test_search_rows_carry_the_document_as_at_evaluation_and_follow_the_own_type(games):
    from skillax.agents.envs import env_spec
    from skillax.agents.envs.runner import EnvPool
    from skillax.methods.skill_alpha.anchors import play_skills
    from skillax.methods.skill_alpha.prompts import skill_context
    from skillax.methods.skill_alpha.setting import play_config
    from skillax.skills.rules import make_rule_body, with_rules
    from skillax.skills.skill_md import make_skill

    pc = play_config(_cfg())
    plans = [COOL_PLAN, PAN_PLAN, CUP_PLAN]
    count = lambda m: sum(len(x["content"].split()) for x in m)   # noqa: E731  (words as tokens)
    with EnvPool(env_spec("alfworld", max_steps=40), 0) as pool:
        rows, st = ps.search_play_transcripts(games, plans, pool, pc, 40, 1.0, 1, 0, count, 10 ** 6)
    assert st["planner_won"] == 3 and st["episodes_with_skills"] == st["won"] + st["truncated"] == 3
    assert st["episodes_guided"] == 2 and st["own_rules_cut"] == 0 and st["over_budget"] == 0   # CUP: no own rules
    cool_rules = ps.type_rules(games[0].family, [(games[1], PAN_PLAN)])                          # from PAN only
    heat_rules = ps.type_rules(games[2].family, [(games[2], CUP_PLAN)])
    assert "stoveburner" in cool_rules[0] and "sinkbasin" in heat_rules[0]
    z = with_rules(make_skill("any-name", "any description"), make_rule_body(cool_rules + heat_rules))
    cool, cup = _rows(rows, games[0]), _rows(rows, games[2])
    first = cool[0]                       # COOL's first step, rendered as EnvScorer.play renders z
    obs = first[1]["content"]
    assert first[:2] == build_play_prompt(games[0].goal, *_reset(games[0]), skills=play_skills(skill_context(z)),
                                          step=0, cfg=pc)
    assert "- [R1] pick-cool-then-place-in-recep, step 1: Find the X. In earlier games it was in or on the " \
           "stoveburner." in obs and "[R4] pick-heat-then-place-in-recep, step 1" in obs
    cool_actions = [_action(r) for r in cool]
    assert cool_actions[0] == "go to stoveburner 1"        # own-type places first, not the Heat rule's sinkbasin
    assert cool_actions[-1] == "move tomato 1 to microwave 1"
    assert _action(cup[0]) == "go to cabinet 1"           # no own-type rules: default order despite the Cool rules
    assert all("pick-cool-then-place-in-recep, step 1" in r[1]["content"] for r in cup)
    assert st["mean_steps_without"] == len(cup)
    assert st["mean_steps_with_skill"] == (len(cool) + len(_rows(rows, games[1]))) / 2


@needs_shared
def test_switch_off_gives_the_default_search_without_a_document(games):
    from skillax.agents.envs import env_spec
    from skillax.agents.envs.runner import EnvPool
    from skillax.methods.common.search_sft import search_episodes
    from skillax.methods.skill_alpha.setting import play_config

    pc = play_config(_cfg())
    count = lambda m: sum(len(x["content"].split()) for x in m)   # noqa: E731
    with EnvPool(env_spec("alfworld", max_steps=40), 0) as pool:
        rows, st = ps.search_play_transcripts(games[:1], [COOL_PLAN], pool, pc, 40, 0.0, 3, 0, count, 10 ** 6)
        eps, _ = search_episodes(games[:1], [COOL_PLAN], [[]], [[]], pool, pc, 40)
    assert rows == eps[0][2] and st["episodes_with_skills"] == 0 and st["episodes_guided"] == 0
    assert _action(rows[0]) == "go to cabinet 1" and all("Skills:" not in r[1]["content"] for r in rows)


def test_play_search_needs_alfworld():
    from skillax.methods.skill_alpha.loop import play_warmstart

    cfg = _cfg()
    cfg.env.name, cfg.sft.play_search = "textworld", True
    with pytest.raises(ValueError, match="play_search needs ALFWorld"):
        play_warmstart(cfg, None)


def test_contrast_documents_full_others_none():
    games = [(t, plan(t)) for t in HEAT + COOL]
    eps, docs = ps.contrast_documents(games, 3, seed=0)
    n = len(games)
    assert eps == games * 3 and len(docs) == 3 * n
    assert docs[:n] == ps.assign_documents(games, 1.0, 3, seed=0)          # (a): the full document
    for (t, _), (full, own), (rest, own_b), none in zip(games, docs[:n], docs[n:2 * n], docs[2 * n:]):
        tag = t.family.replace("_", "-") + ","
        assert own and own_b == [] and none == ([], [])
        assert rest == [r for r in full if not r.startswith(tag)] and len(rest) == 3   # the other type's 3 rules
        assert rest and not any(r.startswith(tag) for r in rest)


@needs_shared
def test_contrast_plays_each_game_in_three_contexts(games):
    from skillax.agents.envs import env_spec
    from skillax.agents.envs.runner import EnvPool
    from skillax.methods.skill_alpha.setting import play_config

    pc = play_config(_cfg())
    count = lambda m: sum(len(x["content"].split()) for x in m)   # noqa: E731
    with EnvPool(env_spec("alfworld", max_steps=40), 0) as pool:
        rows, st = ps.search_play_transcripts(games, [COOL_PLAN, PAN_PLAN, CUP_PLAN], pool, pc, 40, 0.0, 1, 0,
                                              count, 10 ** 6, contrast=True)
    # 3 games x 3 contexts. COOL and PAN: (a) follows the other Cool game's place, (b) (the Heat
    # rules only) and (c) search in the default order: one episode for both. CUP, the only Heat
    # game, has no own rules: (a) = (b) = the Cool rules, (c) none, all one default search. 5 played.
    assert st["planner_won"] == 3 and st["tasks"] == 9 and st["episodes_played"] == 5
    assert st["won"] + st["truncated"] == 9 and st["episodes_with_skills"] == 6 and st["episodes_guided"] == 2
    for task, own_place, other_rule in ((games[0], "go to stoveburner 1", "pick-heat-then-place-in-recep, step 1"),
                                        (games[1], "go to countertop 1", "pick-heat-then-place-in-recep, step 1")):
        firsts = [r for r in _rows(rows, task) if "Step 1." in r[1]["content"]]
        assert len(firsts) == 3
        a, b, c = firsts                                              # rows keep the contexts' order
        assert "pick-cool-then-place-in-recep, step 1" in a[1]["content"] and _action(a) == own_place
        assert "pick-cool-then-place-in-recep" not in b[1]["content"] and other_rule in b[1]["content"]
        assert "[R1]" not in c[1]["content"]
        assert _action(b) == _action(c) != own_place                  # the default order
    cup = [r for r in _rows(rows, games[2]) if "Step 1." in r[1]["content"]]
    assert len(cup) == 3 and len({_action(r) for r in cup}) == 1
    assert cup[0][1]["content"] == cup[1][1]["content"] and "[R1]" not in cup[2][1]["content"]


def test_play_contrast_needs_play_search():
    from skillax.methods.skill_alpha.loop import play_warmstart

    cfg = _cfg()
    cfg.env.name, cfg.sft.play_contrast = "alfworld", True
    with pytest.raises(ValueError, match="play_contrast needs sft.play_search"):
        play_warmstart(cfg, None)


def _action(row):
    text = row[2]["content"]
    return text[text.index("<action>") + len("<action>"):text.index("</action>")]


def _rows(rows, task):
    return [r for r in rows if r[1]["content"].startswith(f"Task: {task.goal}\n")]


def _reset(task):
    """(observation, admissible actions) after resetting ``task``'s game, with no history."""
    from skillax.agents.envs.alfworld import AlfWorldEnv

    env = AlfWorldEnv(max_steps=5)
    try:
        obs, info = env.reset(task)
        return obs, [], info["admissible_commands"]
    finally:
        env.close()


def test_rows_in_budget_drops_long_rows_and_counts_steps():
    from skillax.methods.common.search_sft import rows_in_budget

    row = lambda n: [{"role": "user", "content": "w " * n}]   # noqa: E731  (n words)
    eps = [(HEAT[0], ["a", "b"], [row(3), row(9)]), (HEAT[1], ["a", "b", "c", "d"], [row(4)]), (COOL[0], ["a"], [])]
    rows, st = rows_in_budget(eps, [True, False, False], lambda m: len(m[0]["content"].split()), 5)
    assert rows == [row(3), row(4)]
    assert st == {"transcripts": 2, "over_budget": 1, "max_tokens": 4, "guided": 1, "mean_steps_with": 2.0,
                  "mean_steps_without": 2.5}
    with pytest.raises(ValueError, match="lengths differ"):
        rows_in_budget(eps, [True], len, 5)


@pytest.mark.slow      # ~45 s on the 2-core CI machine: engine creation and one 2048-token SFT step
@needs_shared
def test_play_warmstart_with_play_search_trains_on_the_search_rows(tmp_path, monkeypatch):
    """The switch end to end on real valid_train games with a tiny random model: the planner
    plans come from the cache (skipped when it does not hold them: no planner runs here)."""
    import os

    from skillax.agents.envs.experts import _cache_path
    from skillax.methods.common.engine import PolicyEngine
    from skillax.methods.skill_alpha import setting as setting_lib
    from skillax.methods.skill_alpha.loop import play_warmstart
    from tests.methods.test_skill_alpha_integration import _tiny_model_dir, tiny_config

    cfg = tiny_config(_tiny_model_dir(str(tmp_path / "model")))
    cfg.env.name, cfg.env.train_split, cfg.env.families, cfg.env.max_steps, cfg.env.workers = \
        "alfworld", "valid_train", (), 12, 0
    cfg.model.max_len = 2048
    cfg.sft.n_tasks, cfg.sft.play_steps, cfg.sft.play_batch_size, cfg.sft.play_max_len = 6, 1, 2, 2048
    cfg.sft.play_search, cfg.sft.play_skill_fraction, cfg.sft.play_skill_games = True, 1.0, 2
    tasks = setting_lib.play_sft_tasks(cfg)
    if not all(os.path.exists(_cache_path(t, "planner-wheel", None)) for t in tasks):
        pytest.skip("the planner cache (SKILLAX_CACHE) lacks these games' records: no planner runs in tests")
    engine = PolicyEngine.create(cfg, tmp_path / "work")
    try:
        out = play_warmstart(cfg, engine)
    finally:
        engine.close()
    assert out["search_planner_won"] == 6 and out["search_episodes_with_skills"] == out["search_won"] + \
        out["search_truncated"]
    assert out["transcripts"] == out["search_transcripts"] > 0 and out["updates"] == 1
    assert out["search_max_tokens"] <= 2048 and out["search_fits_inference_budget"]
