"""Skill1 distil demonstrations for the SFT warm start: the answer parses as the RL parser
reads it, and a failed episode is labelled as failed."""

import functools

from skillax.methods.skill1.prompts import DISTIL_PREFIX, distil_demonstration, distil_prompt
from skillax.skills.parsers import parse_distil


@functools.lru_cache(maxsize=1)
def _smollm2_tokenizer():
    from skillax.models.gguf_io import load_gguf_tokenizer
    return load_gguf_tokenizer()

ACTIONS = ["go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1",
           "cool apple 1 with fridge 1", "go to diningtable 1", "put apple 1 in/on diningtable 1"]
GOAL = "put a cool apple in diningtable"


def test_won_episode_demo_parses_with_expected_fields():
    msgs = distil_demonstration(GOAL, ACTIONS, "You put the apple 1 in/on the diningtable 1.", True)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant"]
    answer = msgs[-1]["content"]
    assert answer.startswith(DISTIL_PREFIX)  # what the policy continues at RL time
    d = parse_distil(answer).distil
    assert d is not None
    assert d.task_success is True
    assert [s.description for s in d.subtasks] == ACTIONS[-3:]
    assert all(s.status == "completed" for s in d.subtasks)
    assert d.action_lesson == ("take apple 1 from countertop 1; cool apple 1 with fridge 1; "
                               "put apple 1 in/on diningtable 1")
    assert d.navigation_lesson == "go to countertop 1, then go to fridge 1, then go to diningtable 1"
    assert d.description_head == GOAL
    assert "Outcome: success" in msgs[1]["content"]


def test_failed_and_empty_episodes():
    d = parse_distil(distil_demonstration(GOAL, ACTIONS[:2], "Nothing happens.", False)[-1]["content"]).distil
    assert d.task_success is False and all(s.status == "incomplete" for s in d.subtasks)
    d = parse_distil(distil_demonstration(GOAL, [], "", False)[-1]["content"]).distil
    assert d.subtasks == () and d.action_lesson == "none" and d.navigation_lesson == "no navigation needed"


def test_rl_distil_prompt_ids_are_a_prefix_of_the_sft_transcript():
    """The SFT row must teach exactly the continuation the policy samples after the RL prompt
    (a prompt ending in a lone "{" failed this: BPE merges '{"' in the answer)."""
    from skillax.tokenizers.chat import render_with_masks

    tok = _smollm2_tokenizer()
    obs = "You put the apple 1 in/on the diningtable 1."
    sft_ids, mask = render_with_masks(tok, distil_demonstration(GOAL, ACTIONS, obs, True))
    rl_ids = distil_prompt(tok, GOAL, ACTIONS, obs, True)
    assert sft_ids[:len(rl_ids)] == rl_ids
    assert sum(mask[len(rl_ids):]) > 20  # the JSON itself is trained


def test_textworld_moves_are_navigation():
    d = parse_distil(distil_demonstration("eat the apple", ["go east", "take apple", "eat apple"],
                                          "You eat the apple.", True)[-1]["content"]).distil
    assert d.navigation_lesson == "go east" and d.action_lesson == "take apple; eat apple"
