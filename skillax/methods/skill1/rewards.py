"""Skill1's three rewards, one function per equation (DESIGN.md §1.3; Skill1 paper §3).

The task outcome r(tau) in {0, 1} is split by time-scale:

* ``utility_reward``  — R_util = r(tau): GRPO over the G rollouts of one task (query + play tokens).
* ``rerank_reward``   — R_rerank = NDCG(sigma, argsort(-U)) with the raw utilities U (read at
  rerank time) as gains; 0 on a parse failure or with < 2 candidates. REINFORCE per sample:
  candidate sets differ across the group, so no group normalisation.
* ``distil_reward``   — R_distill = r - max_{s in B_K} U(s), U read at retrieval time; with no
  retrieved skill it is r. GRPO with its own normalisation.
* ``released_code_return`` — the public code's single scalar: sum of step rewards with the
  invalid-action penalty (0.1 per invalid action), used on every sample in
  ``objective="released_code"``.
"""

from __future__ import annotations

from typing import Sequence

from skillax.rl.ndcg import ndcg


def utility_reward(won: bool) -> float:
    """R_util = r(tau) in {0, 1}: 1 iff the environment reports the task won."""
    return 1.0 if won else 0.0


def rerank_reward(permutation: Sequence[int] | None, utilities: Sequence[float], parsed_ok: bool) -> float:
    """R_rerank = NDCG of the policy's order against argsort(-U), gains = raw U.

    Args:
      permutation: 0-based candidate indices, best first (a full permutation; the parser
        appends unranked candidates in original order).
      utilities: U of each candidate in retrieval order, read when the rerank prompt was built.
      parsed_ok: False on a parse failure -> 0.
    Returns: float in [0, 1]; 0 with fewer than 2 candidates.
    """
    if not parsed_ok or permutation is None or len(utilities) < 2:
        return 0.0
    return float(ndcg(list(permutation), list(utilities), one_based=False))


def distil_reward(r: float, retrieved_utilities: Sequence[float]) -> float:
    """R_distill = r - max U over the retrieved set B_K (U at retrieval time); r if none."""
    if not retrieved_utilities:
        return float(r)
    return float(r) - float(max(retrieved_utilities))


def released_code_return(step_rewards: Sequence[float], n_invalid: int, invalid_penalty: float = 0.1) -> float:
    """Released-code trajectory return: sum of environment step rewards - penalty * #invalid actions."""
    return float(sum(step_rewards)) - invalid_penalty * int(n_invalid)
