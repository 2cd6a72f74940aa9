"""Skill1 distil demonstrations for the SFT warm start: the answer parses as the RL parser
reads it, and a failed episode is labelled as failed."""

from skillax.methods.skill1.prompts import DISTIL_PREFIX, distil_demonstration
from skillax.skills.parsers import parse_distil

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
    assert d.navigation_lesson == "go to countertop 1, then fridge 1, then diningtable 1"
    assert d.description_head == GOAL
    assert "Outcome: success" in msgs[1]["content"]


def test_failed_and_empty_episodes():
    d = parse_distil(distil_demonstration(GOAL, ACTIONS[:2], "Nothing happens.", False)[-1]["content"]).distil
    assert d.task_success is False and all(s.status == "incomplete" for s in d.subtasks)
    d = parse_distil(distil_demonstration(GOAL, [], "", False)[-1]["content"]).distil
    assert d.subtasks == () and d.action_lesson == "none" and d.navigation_lesson == "no navigation needed"
