"""SkillOS objective: GRPO with a mean-only baseline over the N rollouts of a task group.

    A_n = r_n − (1/N) Σ_{n'} r_{n'}        (SkillOS paper §3.3; no division by the std)
    L   = E[min(ρ A, clip(ρ, 1 − ε, 1 + ε) A)]   over every curator token of rollout n

One objective, ``"curate"``: every curator generation (all |G| tool-call outputs of rollout n)
carries the same advantage A_n, computed by :func:`skillax.rl.advantages.mean_advantages`
with the group position as the group id. Executor tokens are never trained (frozen π_L).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from skillax.methods.common.rows import Generation
from skillax.rl.advantages import mean_advantages
from skillax.rl.objectives import ObjectiveConfig

OBJECTIVE = "curate"
OBJECTIVES = (OBJECTIVE,)


def objective_configs(rl) -> dict[str, ObjectiveConfig]:
    """``{"curate": ObjectiveConfig}`` from ``config.rl`` (clip range, KL, entropy, aggregation)."""
    return {OBJECTIVE: ObjectiveConfig(weight=1.0, loss="ppo", aggregation=rl.aggregation,
                                       eps_low=rl.eps_low, eps_high=rl.eps_high, kl_coef=rl.kl_coef,
                                       kl_estimator=rl.kl_estimator, entropy_coef=rl.entropy_coef)}


def rollout_advantages(rewards: Sequence[float], group_ids: Sequence[int]) -> np.ndarray:
    """(R,) float32 A_n = r_n − mean of its group's rewards (mean-only; all-equal group -> 0)."""
    return mean_advantages(np.asarray(rewards, np.float64), np.asarray(group_ids, np.int64))


def training_rows(rollouts: Sequence) -> tuple[list[Generation], dict[str, np.ndarray], np.ndarray]:
    """Curator generations of all rollouts and their per-row advantages.

    Args:
      rollouts: :class:`~skillax.methods.skillos.rollout.Rollout` records with ``r`` filled;
        ``rollouts[k].index == k``.
    Returns:
      (gens, {"curate": (len(gens),) float32}, (R,) per-rollout advantages). Every generation
      of rollout n gets A_n.
    Raises:
      ValueError: rollout indices out of order, or a generation whose ``episode`` is not its
        rollout's index.
    """
    for k, ro in enumerate(rollouts):
        if ro.index != k:
            raise ValueError(f"rollout {k} has index {ro.index}; advantages are indexed by position")
    adv = rollout_advantages([ro.r for ro in rollouts], [ro.group for ro in rollouts])
    gens: list[Generation] = []
    for ro in rollouts:
        for g in ro.generations():
            if g.episode != ro.index:
                raise ValueError(f"generation of rollout {ro.index} is labelled episode {g.episode}")
            gens.append(g)
    rows = np.array([adv[g.episode] for g in gens], np.float32)
    return gens, {OBJECTIVE: rows}, adv
