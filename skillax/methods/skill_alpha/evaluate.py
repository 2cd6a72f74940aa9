"""Skill-alpha evaluation: the frozen worker's score on held-out tasks with z_T vs no skill.

Both conditions run in one batched ``scorer.score`` call (same worker, same verifier, same
tasks; the only difference is the skill context), ``repeats`` times each. A task whose run
failed (worker / judge / game failure) is excluded from *both* conditions' means and counted
in ``failed``, so a failure never moves the comparison. The paper's ablation reading of the
action histogram (removing MERGE/PRUNE hurts) is reported next to it by the caller
(:func:`skillax.methods.skill_alpha.inference.action_histogram`).
"""
from __future__ import annotations

import collections
from typing import Sequence

from skillax.agents.envs.base import Task
from skillax.methods.skill_alpha.prompts import skill_context
from skillax.skills.skill_md import SkillDoc


def evaluate_skill(scorer, tasks: Sequence[Task], skill: SkillDoc | None, *, repeats: int = 1,
                   baseline: SkillDoc | None = None) -> dict:
    """Mean verified score on ``tasks`` with ``skill`` vs ``baseline`` (default: no skill).

    Returns ``{"with_skill", "no_skill", "delta", "n", "failed", "per_family": {family:
    {"with_skill", "no_skill", "n"}}, "skill_rules"}``; scores are fractions in [0, 1].
    Raises ValueError for no tasks or ``repeats < 1``.
    """
    if not tasks:
        raise ValueError("evaluate_skill needs at least one held-out task")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    ctx, base = skill_context(skill), skill_context(baseline)
    runs = [(c, t) for _ in range(repeats) for t in tasks for c in (ctx, base)]
    scores = scorer.score(runs)
    per = collections.defaultdict(lambda: [0.0, 0.0, 0])
    tot = [0.0, 0.0, 0]
    failed = 0
    for j in range(0, len(runs), 2):
        a, b = scores[j], scores[j + 1]
        fam = runs[j][1].family
        if a.error is not None or b.error is not None:
            failed += 1
            continue
        for acc in (per[fam], tot):
            acc[0] += a.score
            acc[1] += b.score
            acc[2] += 1
    n = tot[2]
    out = {"with_skill": tot[0] / n if n else None, "no_skill": tot[1] / n if n else None,
           "n": n, "failed": failed, "repeats": repeats,
           "per_family": {f: {"with_skill": v[0] / v[2], "no_skill": v[1] / v[2], "n": v[2]}
                          for f, v in sorted(per.items()) if v[2]}}
    out["delta"] = None if not n else out["with_skill"] - out["no_skill"]
    out["skill_chars"] = len(ctx)
    return out
