"""Skill1 SFT demonstrations: the distil answer parses as the RL parser reads it and teaches
task-type-level lessons (no instance numbers), a failed episode is labelled as failed, the
distil prompt shows the whole trajectory (middle elided only over budget), and the RL query /
distil prompt ids are prefixes of the SFT transcripts (SmolLM2 tokenizer)."""

import functools

import pytest

from skillax.methods.skill1 import lessons
from skillax.methods.skill1.prompts import (DISTIL_PREFIX, distil_demonstration, distil_prompt, query_demonstration,
                                            query_prompt, rerank_demonstration, rerank_prompt, trajectory_view)
from skillax.skills.parsers import parse_distil


@functools.lru_cache(maxsize=1)
def _smollm2_tokenizer():
    from skillax.models.gguf_io import load_gguf_tokenizer
    return load_gguf_tokenizer()


COOL = "pick_cool_then_place_in_recep"
GOAL = "put a cool apple in diningtable"
STEPS = [("go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see a apple 1."),
         ("take apple 1 from countertop 1", "You pick up the apple 1 from the countertop 1."),
         ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed."),
         ("cool apple 1 with fridge 1", "You cool the apple 1 using the fridge 1."),
         ("go to diningtable 1", "You arrive at diningtable 1. On the diningtable 1, you see a mug 2."),
         ("move apple 1 to diningtable 1", "You move the apple 1 to the diningtable 1.")]


def test_won_episode_demo_teaches_task_type_lessons():
    msgs = distil_demonstration(GOAL, COOL, STEPS, True)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant"]
    answer = msgs[-1]["content"]
    assert answer.startswith(DISTIL_PREFIX)  # what the policy continues at RL time
    d = parse_distil(answer).distil
    assert d is not None and d.task_success is True
    assert [(s.name, s.description) for s in d.subtasks] == [
        ("find", "find the apple (it was in/on a countertop)"), ("cool", "cool the apple with the fridge"),
        ("put", "put the apple in/on the diningtable")]
    assert all(s.status == "completed" for s in d.subtasks)
    assert d.action_lesson == ("take the apple from the countertop; cool the apple with the fridge; "
                               "put the apple in/on the diningtable")
    assert d.navigation_lesson == "the apple was in/on a countertop; then go to the fridge, then to the diningtable"
    assert d.description_head == ("Use for cooling: chill it in the fridge. Example: put a cool apple in "
                                  "diningtable.")
    assert not any(lessons.has_instance_numbers(x) for x in
                   (d.action_lesson, d.navigation_lesson, d.description_head, *[s.description for s in d.subtasks]))
    user = msgs[1]["content"]
    assert "Outcome: success" in user and "2. take apple 1 from countertop 1 -> You pick up" in user


def test_failed_and_empty_episodes():
    d = parse_distil(distil_demonstration(GOAL, COOL, STEPS[:2], False)[-1]["content"]).distil
    assert d.task_success is False and all(s.status == "incomplete" for s in d.subtasks)
    d = parse_distil(distil_demonstration(GOAL, COOL, [], False)[-1]["content"]).distil
    assert d.subtasks == () and d.action_lesson == "none" and d.navigation_lesson == "no navigation needed"


def test_abstract_actions_and_instance_numbers():
    assert lessons.abstract_action("take fork 1 from countertop 3") == ("take", "take the fork from the countertop")
    assert lessons.abstract_action("put mug 2 in/on coffeemachine 1") == ("put", "put the mug in/on the coffeemachine")
    assert lessons.abstract_action("use desklamp 1") == ("use", "turn on the desklamp")
    assert lessons.abstract_action("open drawer 4") == ("open", "open the drawer")
    assert lessons.abstract_action("go to drawer 4") == ("go", "to the drawer")
    assert lessons.has_instance_numbers("open drawer 4") and not lessons.has_instance_numbers("open the drawer")
    assert lessons.query_text(GOAL, COOL) == "cooling: chill it in the fridge. apple, diningtable"


def test_trajectory_view_whole_episode_and_elision():
    steps = [(f"go to cabinet {i}", f"You arrive at cabinet {i}. The cabinet {i} is closed.") for i in range(1, 41)]
    full = trajectory_view(steps, max_chars=100_000)
    assert full.count("\n") == 39 and full.startswith("1. go to cabinet 1 -> You arrive")
    short = trajectory_view(steps, max_chars=1000)
    lines = short.split("\n")
    assert len(short) <= 1000
    assert lines[0].startswith("1. go to cabinet 1 ") and lines[-1].startswith("40. go to cabinet 40 ")
    omitted = [x for x in lines if x.startswith("... (")]
    assert len(omitted) == 1
    shown = len(lines) - 1
    assert omitted[0] == f"... ({40 - shown} steps omitted) ..."
    assert trajectory_view([], 1000) == "(no actions)"
    assert trajectory_view([("look", "x" * 500)], 1000) == "1. look -> " + "x" * 117 + "..."
    with pytest.raises(ValueError, match=">= 200"):
        trajectory_view(steps, max_chars=100)


def test_rl_prompt_ids_are_a_prefix_of_the_sft_transcripts():
    """The SFT rows must teach exactly the continuation the policy samples after the RL prompt
    (a prompt ending in a lone "{" failed this: BPE merges '{"' in the answer)."""
    from skillax.tokenizers.chat import render_with_masks

    tok = _smollm2_tokenizer()
    sft_ids, mask = render_with_masks(tok, distil_demonstration(GOAL, COOL, STEPS, True))
    rl_ids = distil_prompt(tok, GOAL, STEPS, True)
    assert sft_ids[:len(rl_ids)] == rl_ids
    assert sum(mask[len(rl_ids):]) > 20  # the JSON itself is trained
    sft_ids, mask = render_with_masks(tok, query_demonstration(GOAL, COOL))
    rl_ids = query_prompt(tok, GOAL)
    assert sft_ids[:len(rl_ids)] == rl_ids and sum(mask[len(rl_ids):]) > 5
    assert tok.decode(sft_ids[len(rl_ids):]).startswith("cooling: chill it in the fridge. apple, diningtable</query>")
    cands = [("Use for heating: warm it in the microwave.", "1. heat it"), ("Use for cooling: chill it.", "1. cool it")]
    sft_ids, mask = render_with_masks(tok, rerank_demonstration(GOAL, cands, [1, 0]))
    rl_ids = rerank_prompt(tok, GOAL, cands)
    assert sft_ids[:len(rl_ids)] == rl_ids and sum(mask[len(rl_ids):]) >= 4
    assert tok.decode(sft_ids[len(rl_ids):]).startswith("2,1</rank>")
    with pytest.raises(ValueError, match="not a permutation"):
        rerank_demonstration(GOAL, cands, [0, 0])


def test_textworld_moves_are_navigation():
    steps = [("go east", "You go east."), ("take apple", "Taken."), ("eat apple", "You eat the apple.")]
    d = parse_distil(distil_demonstration("eat the apple", "tw-simple", steps, True)[-1]["content"]).distil
    assert d.navigation_lesson == "then go east" and d.action_lesson == "take the apple; eat apple"
    assert d.description_head == "Use for tw simple task. Example: eat the apple."


PRIORS_EPISODES = [   # (goal, family, actions) of won episodes: where the goal object was taken from
    ("put a cool apple in diningtable", COOL, ["go to countertop 1", "take apple 1 from countertop 1"]),
    ("put a hot apple in fridge", "pick_heat_then_place_in_recep", ["take apple 2 from fridge 1"]),
    ("put a cool apple in microwave", COOL, ["take knife 1 from drawer 1", "take apple 3 from countertop 2"]),
    ("put a cool tomato in fridge", COOL, ["take tomato 1 from sinkbasin 1"]),
]


def test_location_priors_rank_receptacles_by_count_then_name():
    p = lessons.location_priors(PRIORS_EPISODES)
    # apple: countertop twice (the knife taken first is not the goal object), fridge once
    assert p["object"] == {"apple": ["countertop", "fridge"], "tomato": ["sinkbasin"]}
    assert p["task_type"] == {"pick_cool_then_place_in_recep": ["countertop", "sinkbasin"],
                              "pick_heat_then_place_in_recep": ["fridge"]}
    assert lessons.location_priors(PRIORS_EPISODES, top=1)["object"]["apple"] == ["countertop"]


def test_generic_demo_names_x_and_y_and_where_such_objects_usually_are():
    priors = lessons.location_priors(PRIORS_EPISODES)
    steps = [("open drawer 2", "You open the drawer 2.")] + STEPS[:3] + [("open fridge 1", "You open the fridge 1.")] \
        + STEPS[3:]
    d = parse_distil(distil_demonstration(GOAL, COOL, steps, True, priors=priors)[-1]["content"]).distil
    assert d.action_lesson == ("open a closed receptacle to look inside; find the object X and take it; "
                               "open the fridge; cool X with the fridge; put X in/on the target Y")
    # the apple's own list (countertop, fridge), filled up from its task type's (countertop, sinkbasin)
    assert d.navigation_lesson == ("look for X where such objects usually are (countertop, fridge, sinkbasin); "
                                   "then go to the fridge, then to Y")
    assert [(s.name, s.description) for s in d.subtasks] == [
        ("find", "find X (usually in/on a countertop, fridge, sinkbasin)"), ("cool", "cool X with the fridge"),
        ("put", "put X in/on the target Y")]
    assert d.description_head == "Use for cooling: chill it in the fridge. Example: put a cool apple in diningtable."
    lesson_text = " ".join([d.action_lesson, d.navigation_lesson, *[s.description for s in d.subtasks]])
    assert "apple" not in lesson_text and "diningtable" not in lesson_text   # only the example names them
    assert not lessons.has_instance_numbers(lesson_text)
    # an object the priors never saw falls back on its task type's list; the target opened is "Y"
    d = parse_distil(distil_demonstration("put a cool mug in fridge", COOL,
                                          [("take mug 1 from shelf 1", ""), ("go to fridge 1", ""),
                                           ("open fridge 1", ""), ("move mug 1 to fridge 1", "")],
                                          False, priors=priors)[-1]["content"]).distil
    assert d.action_lesson == "find the object X and take it; open Y if it is closed; put X in/on the target Y"
    assert d.navigation_lesson == "look for X where such objects usually are (countertop, sinkbasin); then go to Y"
    assert d.task_success is False and all(s.status == "incomplete" for s in d.subtasks)


def test_generic_order_search_before_the_take_and_goals_without_an_object():
    priors = lessons.location_priors(PRIORS_EPISODES)
    # opening a receptacle of the target's type while searching, and the lamp switched on before
    # the take, are not written as steps on X
    les = lessons.generic_lessons("look at cd under the desklamp", "look_at_obj_in_light",
                                  ["go to sidetable 1", "use desklamp 1", "open drawer 1", "take cd 1 from drawer 1"],
                                  True, priors)
    assert les["action_lesson"] == "turn on the desklamp; open a closed receptacle to look inside; find the object X and take it"
    les = lessons.generic_lessons(GOAL, COOL, ["open diningtable 1", "take apple 1 from diningtable 1",
                                               "cool apple 1 with fridge 1", "move apple 1 to diningtable 1"], True, priors)
    assert les["action_lesson"].startswith("open a closed receptacle to look inside; find the object X and take it")
    # a TextWorld quest names no object: the demo falls back on the episode-level lessons
    tw = [("go east", "You are in the kitchen."), ("take apple from table", "You take the apple.")]
    d = parse_distil(distil_demonstration("Eat the apple.", "tw-cooking", tw, False, priors=priors)[-1]["content"]).distil
    assert d is not None and "X" not in d.action_lesson.split()
    assert d.action_lesson == parse_distil(distil_demonstration("Eat the apple.", "tw-cooking", tw, False)[-1]["content"]
                                           ).distil.action_lesson
    with pytest.raises(ValueError, match="need a goal object"):
        lessons.generic_lessons("Eat the apple.", "tw-cooking", ["eat apple"], False, priors)
