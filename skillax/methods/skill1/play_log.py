"""What the policy wrote while it played: invalid actions by reason, and a few responses a step.

Campaign 15's GRPO arm (Qwen2.5-Coder-0.5B) stopped writing a complete ``<think>`` block at RL
step 15 -- its training invalid-action rate went from 0.002 to 0.99 in one step while its
held-out success rose -- and no record showed what it wrote instead
(``benchmarks/results/learning/campaign_2026-12-04b``). The Skill1 loop now logs, per RL step:

* ``invalid/<reason>`` metrics: play steps per parse failure of ``agents.agent_loop.parse_action``
  ("missing_think": the action is still played; "missing_action_tag", "empty_action",
  "action_too_long": nothing is played), each a fraction of the step's play steps, so they sum
  to ``invalid_action_rate``;
* ``<workdir>/play_samples.jsonl``: one line per RL step with the first and last response of two
  episodes from different tasks (ours; the raw text, the parsed action and its reason), and every
  task's outcome in the step (``outcomes``: its wins of its group, so a training curve can be read
  per task -- a step's success mixes 8 tasks of very different difficulty;
  ``benchmarks/learning/train_trend.py``), and the metric ``groups_mixed``: the share of the step's
  tasks whose episodes did not all end alike (:func:`mixed_group_rate`).
"""

from __future__ import annotations

import json
import pathlib

from skillax import process
from skillax.agents.agent_loop import INVALID_EMPTY, INVALID_NO_ACTION, INVALID_NO_THINK, INVALID_TOO_LONG

REASONS = (INVALID_NO_THINK, INVALID_NO_ACTION, INVALID_EMPTY, INVALID_TOO_LONG)
SAMPLES_FILE = "play_samples.jsonl"


def invalid_reasons(episodes) -> dict[str, float]:
    """{"invalid/<reason>": play steps with that reason / all play steps} over ``episodes``
    (``rollout.Episode`` with a trajectory; every reason of :data:`REASONS` present, 0.0 when
    none; an episode without a trajectory counts no step). A reason outside REASONS raises
    ValueError (the parser's list changed and this table must follow)."""
    counts = dict.fromkeys(REASONS, 0)
    n = 0
    for ep in episodes:
        for st in (ep.trajectory.steps if ep.trajectory is not None else ()):
            n += 1
            if st.invalid_reason is None:
                continue
            if st.invalid_reason not in counts:
                raise ValueError(f"unknown invalid reason {st.invalid_reason!r}: one of {REASONS}")
            counts[st.invalid_reason] += 1
    return {f"invalid/{r}": c / max(n, 1) for r, c in counts.items()}


def task_outcomes(episodes) -> list[dict]:
    """One {"task_id", "group", "won", "of", "steps"} per task of the step, in group order: its
    episodes won (int) of its episodes (``of``, the group size G), and their mean play turns
    (float, 0.0 when none played). An episode without a trajectory (its environment failed)
    counts as not won with 0 turns, as the step's ``success_rate`` counts it."""
    groups: dict[int, list] = {}
    for ep in episodes:
        groups.setdefault(int(ep.group), []).append(ep)
    out = []
    for g in sorted(groups):
        eps = groups[g]
        task = next((ep.task for ep in eps if ep.task is not None), None)
        turns = [len(ep.trajectory.steps) if ep.trajectory is not None else 0 for ep in eps]
        out.append({"task_id": task.id if task is not None else None, "group": g,
                    "won": sum(bool(ep.trajectory is not None and ep.trajectory.won) for ep in eps),
                    "of": len(eps), "steps": round(sum(turns) / len(turns), 3)})
    return out


def mixed_group_rate(outcomes: list[dict]) -> float:
    """Fraction of the step's tasks whose G episodes neither all won nor all lost (``outcomes``
    from :func:`task_outcomes`; 0.0 for none): the groups where GRPO's success advantage is not
    zero. A policy that plays a task the same way in all G episodes gives its group no signal
    (PITFALLS 3; DAPO's dynamic sampling filters such groups)."""
    if not outcomes:
        return 0.0
    return sum(0 < o["won"] < o["of"] for o in outcomes) / len(outcomes)


def play_samples(episodes, step: int) -> dict:
    """{"step", "samples": [...], "outcomes": [...]} -- the first and last play response of
    episode 0 and of the first episode of the step's last task (one when the step has one task),
    each {"task_id", "group", "turn", "response", "action", "invalid_reason", "won"}; and
    :func:`task_outcomes` of all ``episodes``."""
    eps = [ep for ep in episodes if ep.trajectory is not None and ep.trajectory.steps]
    picked = []
    if eps:
        last_group = eps[-1].group
        picked = [eps[0]] + [next(ep for ep in eps if ep.group == last_group)]
        picked = picked[:1] if picked[1] is picked[0] else picked
    samples = []
    for ep in picked:
        steps = ep.trajectory.steps
        for turn in sorted({0, len(steps) - 1}):
            st = steps[turn]
            samples.append({"task_id": ep.task.id, "group": ep.group, "turn": turn, "response": st.response,
                            "action": st.action, "invalid_reason": st.invalid_reason,
                            "won": bool(ep.trajectory.won)})
    return {"step": int(step), "samples": samples, "outcomes": task_outcomes(episodes)}


def write_samples(workdir: pathlib.Path, record: dict) -> None:
    """Append ``record`` to ``workdir/play_samples.jsonl`` (writer process only)."""
    if process.is_writer():
        with open(pathlib.Path(workdir) / SAMPLES_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
