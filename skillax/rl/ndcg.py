"""NDCG with raw gains: the Skill1 rerank reward.

Skill1 (Sec. 3.3, "trend" signal): the policy ranks the K retrieved candidates; the reward
is ``R_rerank = NDCG(sigma, argsort(-U))`` where the gain of a candidate is its raw utility
``U`` (no ``2^U - 1``), so the ideal order sorts candidates by descending ``U``::

    DCG(sigma)  = sum_{i=1..K} U[sigma_i] / log2(i + 1)     (i is the 1-based position)
    NDCG(sigma) = DCG(sigma) / DCG(argsort(-U))

Edge cases (our decisions, following DESIGN.md Sec. 1.3):

* parse failure (``ranking is None``) -> 0.0;
* fewer than 2 candidates -> 0.0 (nothing to rank; ``<rank>none</rank>``);
* all gains zero (IDCG = 0) -> 0.0;
* ties in gains: any order among tied candidates gives the same DCG, hence NDCG 1 when
  the ranking is otherwise ideal;
* partial rankings: invalid (out of range) and duplicate ids are dropped, unranked
  candidates are appended in their original order (:func:`complete_ranking`).

Host-side numpy/pure Python; rewards never enter jit.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def complete_ranking(ranking: Sequence[int], num_candidates: int, *, one_based: bool = True) -> list[int]:
    """Turn a possibly partial / noisy ranking into a full 0-based permutation.

    Args:
      ranking: candidate ids in ranked order (1-based by default, as in ``<rank>3,1,2</rank>``).
      num_candidates: K.
    Returns:
      list of K distinct 0-based indices: the valid, first-seen ids of ``ranking`` in order,
      then every unranked candidate in original order. E.g. ``([3, 3, 9], 4)`` ->
      ``[2, 0, 1, 3]``.
    """
    off = 1 if one_based else 0
    seen: list[int] = []
    for r in ranking:
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)):
            continue
        i = int(r) - off
        if 0 <= i < num_candidates and i not in seen:
            seen.append(i)
    return seen + [i for i in range(num_candidates) if i not in seen]


def dcg(gains_in_order: Sequence[float]) -> float:
    """``sum_i g_i / log2(i + 1)`` over 1-based positions i of gains already in ranked order."""
    return float(sum(g / math.log2(i + 2) for i, g in enumerate(gains_in_order)))


def ndcg(ranking: Sequence[int] | None, gains: Sequence[float], *, one_based: bool = True) -> float:
    """Skill1 rerank reward: NDCG of ``ranking`` with raw gains ``gains`` (utilities U).

    Args:
      ranking: ranked candidate ids (1-based by default), possibly partial; None = the
        policy's output failed to parse.
      gains: (K,) non-negative finite gains in original candidate order (Skill1: U in [0, 1]).
    Returns:
      float in [0, 1]. 0.0 on parse failure, K < 2 or all-zero gains.
    Raises:
      ValueError: negative or non-finite gains (NDCG is undefined for them).
    Source: Skill1 Sec. 3.3 (R_rerank = NDCG(sigma, argsort(-U)), raw U as gain).
    """
    g = np.asarray(gains, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(g)):
        raise ValueError(f"gains must be finite, got {g.tolist()}")
    if np.any(g < 0):
        raise ValueError(f"gains must be >= 0 for NDCG, got {g.tolist()}")
    if ranking is None or g.size < 2:
        return 0.0
    ideal = dcg(np.sort(g)[::-1])
    if ideal <= 0.0:
        return 0.0
    perm = complete_ranking(ranking, g.size, one_based=one_based)
    return min(1.0, dcg(g[perm]) / ideal)
