"""SkillOS evaluation: the executor with an online-curated repo vs no repo, and repo statistics.

"With repo" runs Algorithm 1 once per held-out group (one rollout, the curator at the eval
temperature, the repo empty at the start of each group, as in training): the executor plays
every task with the skills retrieved from the repo curated so far. "No repo" (the paper's
No Memory baseline) plays the same tasks with no skills. Both report success rate and mean
steps over all tasks, and over the tasks after the first of each group (the ones a curated
repo can help). Repo statistics: final size (skills, tokens) and tool calls by kind -- the
paper reports the shift from insertion to refinement (update) as training proceeds.
"""
from __future__ import annotations

import collections
import pathlib
from typing import Callable, Sequence

import numpy as np

from skillax.methods.skillos.groups import TaskGroup
from skillax.methods.skillos.rollout import OP_KINDS, RolloutConfig, rollout_step


def repo_stats(rolls, count_tokens: Callable[[str], int]) -> dict:
    """Mean final repo size and tool calls by kind over ``rolls``; ``update_share`` =
    updates / (inserts + updates) (0 when neither happened)."""
    ops = collections.Counter()
    for r in rolls:
        ops.update(r.ops())
    n = max(len(rolls), 1)
    ins, upd = ops["insert_skill"], ops["update_skill"]
    out = {"repo_skills": sum(len(r.repo) for r in rolls) / n,
           "repo_tokens": sum(r.repo.size_tokens(count_tokens) for r in rolls) / n,
           "calls_total": sum(ops.values()), "calls_invalid": ops["invalid"],
           "update_share": upd / (ins + upd) if ins + upd else 0.0}
    out.update({f"ops_{k}": ops[k] for k in OP_KINDS})
    return out


def _summary(successes: Sequence[Sequence[bool]], steps: Sequence[Sequence[int]]) -> dict:
    flat = [s for g in successes for s in g]
    later = [s for g in successes for s in g[1:]]
    return {"success_rate": float(np.mean(flat)) if flat else 0.0,
            "success_after_first": float(np.mean(later)) if later else 0.0,
            "mean_steps": float(np.mean([n for g in steps for n in g])) if flat else 0.0,
            "n_tasks": len(flat)}


def evaluate(groups: Sequence[TaskGroup], curator, executor, pool, root: str | pathlib.Path,
             cfg: RolloutConfig, *, no_repo: bool = True) -> dict:
    """``{"with_repo": {...}, "no_repo": {...}, "repo": {...}}`` on held-out ``groups``.

    Args:
      curator: ``PolicySampler`` at the eval temperature (its samples are not trained).
      executor: the frozen :class:`~skillax.methods.skillos.executor.Executor`.
      no_repo: also run the No Memory baseline.
    """
    rolls = rollout_step(groups, 1, curator, executor, pool, root, cfg, tag="eval")
    count = lambda s: len(curator.tokenizer.encode(s, add_special_tokens=False))  # noqa: E731
    out = {"with_repo": _summary([[rec.success for rec in r.records] for r in rolls],
                                 [[rec.n_steps for rec in r.records] for r in rolls]),
           "repo": repo_stats(rolls, count)}
    if no_repo:
        tasks = [t for g in groups for t in g.tasks]
        trajs = executor.play(pool, tasks, [[] for _ in tasks])
        it = iter(trajs)
        per = [[next(it) for _ in g.tasks] for g in groups]
        out["no_repo"] = _summary([[bool(t.won) and not t.failed for t in g] for g in per],
                                  [[t.n_steps for t in g] for g in per])
    return out
