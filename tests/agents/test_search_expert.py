"""The searching ALFWorld expert (agents.envs.search_expert) and its play transcripts
(methods.common.search_sft): hand-derived search orders, real games, the places read back
from a rendered skill, and a plan that cannot be followed."""
import pytest

from skillax.agents.agent_loop import PlayConfig
from skillax.agents.envs.search_expert import SearchExpert, instances_seen, play_expert, receptacles, search_order
from skillax.methods.skillos.type_skills import TypeKnowledge, find_places
from tests.conftest import SHARED, needs_shared

# valid_train games with their planner plans (from the planner cache, copied here so the tests
# need no planner). PICK2: the books lie on bed 1; the rooms' receptacles sort armchair 1-3,
# bed 1, ... so the default search passes the three armchairs, then takes book 2 (the planner
# took book 1 first): the names swap in every later action, and the second search goes back
# to bed 1, where it saw book 1.
PICK2 = "valid_train/pick_two_obj_and_place-Book-None-Desk-309/trial_T20190909_061156_951604"
PICK2_PLAN = ["go to bed 1", "take book 1 from bed 1", "go to desk 1", "move book 1 to desk 1",
              "go to bed 1", "take book 2 from bed 1", "go to desk 1", "move book 2 to desk 1"]
COOL = "valid_train/pick_cool_then_place_in_recep-Tomato-None-Microwave-14/trial_T20190907_024221_811233"
COOL_PLAN = ["go to countertop 1", "take tomato 1 from countertop 1", "go to fridge 1", "cool tomato 1 with fridge 1",
             "go to microwave 1", "open microwave 1", "move tomato 1 to microwave 1"]


def test_receptacles_sort_by_type_then_number():
    adm = ["go to cabinet 10", "go to cabinet 2", "look", "go to bed 1", "take pen 1 from desk 1", "go to cabinet 1"]
    assert receptacles(adm) == ["bed 1", "cabinet 1", "cabinet 2", "cabinet 10"]


def test_search_order_puts_the_skill_places_first_in_their_order():
    rooms = ["bed 1", "cabinet 1", "cabinet 2", "countertop 1", "drawer 1", "drawer 2"]
    assert search_order(rooms, ["drawer", "countertop"]) == ["drawer 1", "drawer 2", "countertop 1",
                                                             "bed 1", "cabinet 1", "cabinet 2"]
    assert search_order(rooms, ["sofa"]) == rooms          # a place the room lacks changes nothing
    assert search_order(rooms) == rooms


def test_instances_seen_matches_whole_type_names():
    obs = "You arrive at countertop 1. On the countertop 1, you see a butterknife 1, a knife 2, and a knife 1."
    assert instances_seen(obs, "knife") == ["knife 2", "knife 1"]
    assert instances_seen(obs, "butterknife") == ["butterknife 1"]
    assert instances_seen("You open the drawer 1. The drawer 1 is open. In it, you see nothing.", "knife") == []


def test_find_places_reads_back_what_the_teacher_renders():
    k = TypeKnowledge.start("pick_two_obj_and_place", "put two cd in safe", "cd", "safe",
                            ["go to drawer 1", "take cd 1 from drawer 1", "go to safe 1", "move cd 1 to safe 1",
                             "go to shelf 2", "take cd 2 from shelf 2", "go to safe 1", "move cd 2 to safe 1"])
    k.add("put two cd in safe", "cd", "safe",
          ["go to shelf 1", "take cd 3 from shelf 1", "go to safe 1", "move cd 3 to safe 1",
           "go to desk 1", "take cd 1 from desk 1", "go to safe 1", "move cd 1 to safe 1"])
    _, body = k.render()
    assert find_places(body) == [["drawer", "shelf"], ["shelf", "desk"]]
    assert find_places("1. Find the X. Go there.") == [[]]
    assert find_places("no procedure") == []


def _play(task, plan, places=()):
    from skillax.agents.envs.alfworld import AlfWorldEnv

    env = AlfWorldEnv(max_steps=60)
    try:
        ex = SearchExpert(plan, places)
        return (ex, *play_expert(env, task, ex, 60))
    finally:
        env.close()


@pytest.fixture(scope="module")
def games():
    from skillax.agents.envs.alfworld import load_alfworld_tasks

    by_id = {t.id: t for t in load_alfworld_tasks(str(SHARED / "data" / "alfworld"), splits=["valid_train"])}
    return by_id[PICK2], by_id[COOL]


@needs_shared
def test_default_search_on_a_real_pick_two_game_swaps_the_instances(games):
    ex, acts, won = _play(games[0], PICK2_PLAN)
    assert won and ex.error is None
    assert acts == ["go to armchair 1", "go to armchair 2", "go to armchair 3", "go to bed 1",
                    "take book 2 from bed 1", "go to desk 1", "move book 2 to desk 1",
                    "go to bed 1", "take book 1 from bed 1", "go to desk 1", "move book 1 to desk 1"]


@needs_shared
def test_a_skill_place_sends_the_search_straight_there(games):
    _, acts, won = _play(games[1], COOL_PLAN, [["countertop"]])
    assert won and acts == COOL_PLAN                      # the tomato is on countertop 1
    _, acts, won = _play(games[1], COOL_PLAN)             # default: cabinets first
    assert acts[0] == "go to cabinet 1" and len(acts) > len(COOL_PLAN)


@needs_shared
def test_search_episodes_put_skills_in_the_prompts_and_drop_a_plan_that_fails(games):
    from skillax.agents.envs import env_spec
    from skillax.agents.envs.runner import EnvPool
    from skillax.methods.common.search_sft import search_episodes

    cfg = PlayConfig(history_k=2, max_admissible=40, max_skills=3)
    skill = "pick-cool-then-place-in-recep: How to ...\n1. Find the X. In earlier games it was in or on the countertop."
    bad = ["go to bed 1", "cool book 1 with fridge 1"]        # not admissible at bed 1: an expert error
    with EnvPool(env_spec("alfworld", max_steps=30), 0) as pool:
        eps, st = search_episodes([games[1], games[0], games[0]], [COOL_PLAN, PICK2_PLAN, bad],
                                  [[skill], [], []], [[["countertop"]], [], []], pool, cfg, 30)
    assert [len(a) for _, a, _ in eps] == [7, 11]
    assert st["won"] == 2 and st["expert_errors"] == 1 and st["steps"] == 7 + 11 + 1
    assert st["kept"] == [0, 1]                       # input index of each kept episode (the third failed)
    (t0, a0, rows0), (_, a1, rows1) = eps
    assert len(rows0) == 7 and all(skill.splitlines()[1] in r[1]["content"] for r in rows0)
    assert rows0[1][2]["content"] == "<think>I should take tomato 1 from countertop 1.</think>" \
                                     "<action>take tomato 1 from countertop 1</action>"
    assert all("Skills" not in r[1]["content"] and skill.splitlines()[1] not in r[1]["content"] for r in rows1)


@needs_shared
def test_one_game_in_two_skill_contexts_is_played_once_and_rendered_per_context(games):
    """``sft.play_contrast``'s "other types' skills" and "no skill" contexts of a game have the
    same plan and no places: one episode, two sets of rows, equal to playing each alone."""
    from skillax.agents.envs import env_spec
    from skillax.agents.envs.runner import EnvPool
    from skillax.methods.common.search_sft import search_episodes

    cfg = PlayConfig(history_k=2, max_admissible=40, max_skills=3)
    other = "pick-two-obj-and-place: How to ...\n1. Find the X. In earlier games it was in or on the bed."
    with EnvPool(env_spec("alfworld", max_steps=30), 0) as pool:
        eps, st = search_episodes([games[1], games[1]], [COOL_PLAN, COOL_PLAN], [[other], []], [[], []],
                                  pool, cfg, 30)
        alone, st1 = search_episodes([games[1]], [COOL_PLAN], [[]], [[]], pool, cfg, 30)
    assert st["episodes_played"] == 1 and st1["episodes_played"] == 1
    assert st["steps"] == st1["steps"] == len(alone[0][1]) > len(COOL_PLAN)   # default search: cabinets first
    assert st["kept"] == [0, 1] and st["won"] + st["truncated"] == 2
    assert eps[0][1] == eps[1][1] == alone[0][1]
    assert eps[1][2] == alone[0][2]                                   # the no-skill rows, bit for bit
    assert len(eps[0][2]) == len(alone[0][2])
    assert all(other.splitlines()[1] in r[1]["content"] for r in eps[0][2])
    assert all(a[2] == b[2] and a[1]["content"] != b[1]["content"] for a, b in zip(eps[0][2], eps[1][2]))
