"""methods.skill1.play_log: invalid actions by reason (hand-counted) and the per-step response
samples, on responses parsed by the real ``agent_loop.parse_action``."""
from __future__ import annotations

import json

import pytest

from skillax.agents.agent_loop import Step, Trajectory, parse_action
from skillax.agents.envs.base import Task
from skillax.methods.skill1 import play_log
from skillax.methods.skill1.rollout import Episode

OK = "<think>I should go to desk 1.</think><action>go to desk 1</action>"
NO_THINK = "<action>go to desk 1</action>"                   # played, invalid
NO_TAG = "go to desk 1"                                     # nothing played
EMPTY = "<think>x</think><action> </action>"


def _episode(index, group, responses, won=False):
    task = Task(id=f"t{group}", env="alfworld", family="pick", goal="put a pen on the desk")
    tr = Trajectory(task.id, task.goal, won=won)
    for text in responses:
        action, reason = parse_action(text)
        tr.steps.append(Step("obs", [], text, action, reason is None, reason))
    return Episode(index=index, group=group, task=task, trajectory=tr)


def test_invalid_reasons_hand_counted():
    # 10 play steps: 5 valid, 3 missing think, 1 missing tag, 1 empty
    eps = [_episode(0, 0, [OK, NO_THINK, NO_THINK]), _episode(1, 0, [OK, OK, NO_TAG]),
           _episode(2, 1, [EMPTY, NO_THINK, OK, OK]), Episode(index=3, group=1, task=None)]
    got = play_log.invalid_reasons(eps)
    assert got == {"invalid/missing_think": 0.3, "invalid/missing_action_tag": 0.1,
                   "invalid/empty_action": 0.1, "invalid/action_too_long": 0.0}
    # the parts sum to the loop's invalid_action_rate (5 invalid of 10)
    assert sum(got.values()) == pytest.approx(sum(ep.trajectory.n_invalid for ep in eps[:3]) / 10)
    assert play_log.invalid_reasons([]) == dict.fromkeys(
        ("invalid/missing_think", "invalid/missing_action_tag", "invalid/empty_action", "invalid/action_too_long"), 0.0)
    bad = _episode(0, 0, [OK])
    bad.trajectory.steps[0].invalid_reason = "made_up"
    with pytest.raises(ValueError, match="unknown invalid reason 'made_up'"):
        play_log.invalid_reasons([bad])


def test_play_samples_first_and_last_turns_of_two_tasks(tmp_path, monkeypatch):
    eps = [_episode(0, 0, [OK, NO_THINK, NO_TAG]), _episode(1, 0, [OK]), _episode(2, 1, [NO_THINK], won=True),
           _episode(3, 1, [OK, OK])]
    rec = play_log.play_samples(eps, step=7)
    assert rec["step"] == 7
    assert [(s["task_id"], s["turn"], s["invalid_reason"], s["won"]) for s in rec["samples"]] == [
        ("t0", 0, None, False), ("t0", 2, "missing_action_tag", False), ("t1", 0, "missing_think", True)]
    assert rec["samples"][0]["response"] == OK and rec["samples"][0]["action"] == "go to desk 1"
    assert rec["samples"][1]["action"] is None
    # every task's outcome, hand-counted: t0 won 0 of 2 in 3 and 1 turns, t1 1 of 2 in 1 and 2
    assert rec["outcomes"] == [{"task_id": "t0", "group": 0, "won": 0, "of": 2, "steps": 2.0},
                               {"task_id": "t1", "group": 1, "won": 1, "of": 2, "steps": 1.5}]
    # one of the two tasks won some and lost some: half the groups carry a success signal
    assert play_log.mixed_group_rate(rec["outcomes"]) == 0.5
    assert play_log.mixed_group_rate([{"won": 0, "of": 4}, {"won": 4, "of": 4}, {"won": 3, "of": 4}]) == 1 / 3
    assert play_log.mixed_group_rate([]) == 0.0
    # an episode whose environment failed (no trajectory) counts as not won, 0 turns
    failed = Episode(index=4, group=1, task=eps[2].task)
    assert play_log.task_outcomes(eps[2:] + [failed]) == [
        {"task_id": "t1", "group": 1, "won": 1, "of": 3, "steps": 1.0}]
    # one task: its first episode only; no played step: no sample
    assert len(play_log.play_samples(eps[:2], 0)["samples"]) == 2
    assert play_log.play_samples([Episode(index=0, group=0, task=None)], 0) == {
        "step": 0, "samples": [], "outcomes": [{"task_id": None, "group": 0, "won": 0, "of": 1, "steps": 0.0}]}

    play_log.write_samples(tmp_path, rec)
    play_log.write_samples(tmp_path, play_log.play_samples(eps[:1], 8))
    lines = [json.loads(x) for x in (tmp_path / play_log.SAMPLES_FILE).read_text().splitlines()]
    assert [x["step"] for x in lines] == [7, 8] and lines[0] == rec
    monkeypatch.setattr(play_log.process, "is_writer", lambda: False)
    play_log.write_samples(tmp_path, rec)                      # another process writes nothing
    assert len((tmp_path / play_log.SAMPLES_FILE).read_text().splitlines()) == 2
