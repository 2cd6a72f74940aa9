"""Skill-alpha's GRPO objective over the G candidate edits of each unit (DESIGN.md §1.1).

Paper settings: group size G = 8, rollout temperature 1.0, entropy coefficient 0.001, KL off,
actor lr 5e-7. Advantages: GRPO ``A_i = (R_i - mean_G R) / (std_G R + eps)`` with the
*Bessel-corrected* std (``ddof = 1``, as verl's ``compute_grpo_outcome_advantage`` and TRL's
GRPOTrainer; ``skillax.rl.advantages``), groups = units. A unit whose G rewards are all equal
(e.g. every candidate invalid) has advantages exactly 0: with ``zero_variance="keep"`` its rows
stay in the batch (entropy gradient only, counted in the token denominator), with ``"drop"``
they are left out. Skipped units (worker / judge failure, prompt over budget) give no rows.
The loss is the PPO-clipped surrogate on the completion tokens only (the pre-filled
``<think>`` and the prompt are context).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from skillax.methods.common.rows import Generation
from skillax.rl.advantages import grpo_advantages
from skillax.rl.objectives import ObjectiveConfig

OBJECTIVE = "edit"
DDOF = 1


def objective_configs(rl) -> dict[str, ObjectiveConfig]:
    """{"edit": ObjectiveConfig} from ``config.rl`` (eps_low/eps_high, entropy_coef, kl_coef,
    kl_estimator, aggregation)."""
    return {OBJECTIVE: ObjectiveConfig(
        weight=1.0, loss="ppo", aggregation=rl.get("aggregation", "token_mean"),
        eps_low=rl.get("eps_low", 0.2), eps_high=rl.get("eps_high", 0.2),
        kl_coef=rl.get("kl_coef", 0.0), kl_estimator=rl.get("kl_estimator", "k2"),
        entropy_coef=rl.get("entropy_coef", 0.001))}


def training_rows(results: Sequence, zero_variance: str = "keep"
                  ) -> tuple[list[Generation], dict[str, np.ndarray], dict]:
    """Generations to train on and their advantages ``{"edit": (N,) float32}``.

    Args:
      results: ``UnitResult`` list of one step (skipped units are ignored).
      zero_variance: "keep" | "drop" (module docstring).
    Returns:
      (gens, advantages, stats) with stats ``rows``, ``groups``, ``zero_variance_groups``.
    Raises ValueError for an unknown ``zero_variance`` or a unit without generations.
    """
    if zero_variance not in ("keep", "drop"):
        raise ValueError(f"zero_variance must be 'keep' or 'drop', got {zero_variance!r}")
    gens: list[Generation] = []
    rewards, groups = [], []
    n_groups = n_zero = 0
    for res in results:
        if res.skipped:
            continue
        r = [c.reward for c in res.candidates]
        if any(c.generation is None for c in res.candidates):
            raise ValueError("a trained unit needs the editor's generations")
        zero = max(r) - min(r) <= 1e-9
        n_zero += zero
        if zero and zero_variance == "drop":
            continue
        for c in res.candidates:
            gens.append(c.generation)
            rewards.append(c.reward)
            groups.append(n_groups)
        n_groups += 1
    if not gens:
        return [], {OBJECTIVE: np.zeros(0, np.float32)}, {"rows": 0, "groups": 0, "zero_variance_groups": n_zero}
    adv = grpo_advantages(np.asarray(rewards, np.float64), np.asarray(groups, np.int64), ddof=DDOF)
    return gens, {OBJECTIVE: adv.astype(np.float32)}, {"rows": len(gens), "groups": n_groups,
                                                      "zero_variance_groups": n_zero}
