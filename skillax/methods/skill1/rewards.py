"""Skill1's three rewards, one function per equation (DESIGN.md §1.3; Skill1 paper §3).

The task outcome r(tau) in {0, 1} is split by time-scale:

* ``utility_reward``  — R_util = r(tau): GRPO over the G rollouts of one task (query + play tokens).
* ``rerank_reward``   — R_rerank = NDCG(sigma, argsort(-U)) with the raw utilities U (read at
  rerank time) as gains; 0 on a parse failure or with < 2 candidates. REINFORCE per sample:
  candidate sets differ across the group, so no group normalisation.
* ``distil_reward``   — R_distill = r - max_{s in B_K} U(s), U read at retrieval time; with no
  retrieved skill it is r; 0 when the distil JSON did not parse (``rl.distil_parse_fail =
  "zero"``, the released code's rule; ``"floor"``: -1, the reward's lower bound; ``"raw"``
  keeps the formula). GRPO with its own normalisation.
* ``released_code_score`` — ``objective="released_code"``: the score of one step sample
  (``methods.skill1.objectives`` cites each term).
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


DISTIL_PARSE_FAIL = ("zero", "floor", "raw")
DISTIL_FLOOR = -1.0   # the lowest r - max U can be: r = 0, U = 1


def distil_reward(r: float, retrieved_utilities: Sequence[float], parsed_ok: bool = True,
                  on_parse_fail: str = "zero") -> float:
    """R_distill = r - max U over the retrieved set B_K (U at retrieval time); r if none.

    Skill1 paper §3 (distillation reward, "variation" term); float in [-1, 1]. ``parsed_ok``
    False (the distil JSON did not parse, so nothing could be admitted):
      "zero"  (default) 0: Skill1's released code gives no distil credit to an unparsable
              reflection; without it a won episode with garbage distil text gets a positive
              advantage and RL erodes the format admission depends on (issue 19 item 1).
      "floor" -1 (``DISTIL_FLOOR``), ours: once the retrieved utilities exceed the success
              rate, 0 is above a lost episode's parsed distil (r - max U < 0; campaign 14's
              mean distil reward was negative in 26 of 29 steps), so under the group
              normalisation a parse failure outranks a parsed distil and RL can learn to break
              the format (the lambda1 = 0 arm's parse rate fell to 0.16 by step 29:
              ``benchmarks/results/learning/campaign_2026-12-04``); at the floor a failure
              never outranks a parsed distil of its group.
      "raw"   the formula, as if it had parsed.
    Raises ValueError for another ``on_parse_fail``.
    """
    if on_parse_fail not in DISTIL_PARSE_FAIL:
        raise ValueError(f"on_parse_fail must be one of {DISTIL_PARSE_FAIL}, got {on_parse_fail!r}")
    if not parsed_ok and on_parse_fail == "zero":
        return 0.0
    if not parsed_ok and on_parse_fail == "floor":
        return DISTIL_FLOOR
    if not retrieved_utilities:
        return float(r)
    return float(r) - float(max(retrieved_utilities))


def released_code_score(won: bool, ndcg_value: float, step_invalid: bool, *, success_reward: float = 10.0,
                        lambda_rerank: float = 0.3, invalid_penalty: float = 0.1) -> float:
    """Score of one step sample under ``objective="released_code"`` (sources in
    ``methods.skill1.objectives``): ``success_reward * won + lambda_rerank * NDCG`` for the
    trajectory, minus ``invalid_penalty`` when this sample is an invalid play step.

    Example: won, NDCG 0.9, valid step -> 10 + 0.27 = 10.27; lost, no rerank, invalid -> -0.1.
    """
    return (success_reward * float(bool(won)) + lambda_rerank * float(ndcg_value)
            - (invalid_penalty if step_invalid else 0.0))
