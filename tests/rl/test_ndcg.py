"""NDCG with raw gains: hand-worked permutations, ties, partial rankings, edge cases."""
import math

import pytest

from skillax.rl.ndcg import complete_ranking, dcg, ndcg

L3 = math.log2(3)  # 1.5849625


def test_hand_worked_three_candidates():
    U = [0.2, 0.9, 0.5]  # candidates 1, 2, 3
    idcg = 0.9 / 1 + 0.5 / L3 + 0.2 / 2  # ideal order 2, 3, 1 -> 1.3154649
    assert dcg([0.9, 0.5, 0.2]) == pytest.approx(1.3154649, abs=1e-7)
    assert ndcg([2, 3, 1], U) == pytest.approx(1.0)
    # <rank>3,1,2</rank>: 0.5 + 0.2/log2(3) + 0.9/2 = 1.0761859
    assert ndcg([3, 1, 2], U) == pytest.approx((0.5 + 0.2 / L3 + 0.45) / idcg, abs=1e-9)
    assert ndcg([3, 1, 2], U) == pytest.approx(0.818103, abs=1e-6)
    # worst order 1, 3, 2: (0.2 + 0.5/log2 3 + 0.45) / idcg = 0.9654649 / 1.3154649
    assert ndcg([1, 3, 2], U) == pytest.approx(0.733934, abs=1e-6)
    # 0-based ids give the same
    assert ndcg([2, 0, 1], U, one_based=False) == ndcg([3, 1, 2], U)


def test_ties_any_order_is_one():
    U = [0.5, 0.5, 0.1]
    assert ndcg([1, 2, 3], U) == 1.0
    assert ndcg([2, 1, 3], U) == 1.0
    # putting the low one in the middle costs: (0.5 + 0.1/log2 3 + 0.5/2) / (0.5 + 0.5/log2 3 + 0.05)
    assert ndcg([1, 3, 2], U) == pytest.approx((0.5 + 0.1 / L3 + 0.25) / (0.5 + 0.5 / L3 + 0.05), abs=1e-12)


def test_partial_rankings_completed_in_original_order():
    assert complete_ranking([3], 4) == [2, 0, 1, 3]
    assert complete_ranking([3, 3, 9, 0, 1], 4) == [2, 0, 1, 3]  # dup, out of range, 0 dropped
    assert complete_ranking([], 3) == [0, 1, 2]
    U = [0.1, 0.2, 0.9, 0.4]
    # ranking "3" -> order 3, 1, 2, 4: gains 0.9, 0.1, 0.2, 0.4
    expected = (0.9 + 0.1 / L3 + 0.2 / 2 + 0.4 / math.log2(5)) / (0.9 + 0.4 / L3 + 0.2 / 2 + 0.1 / math.log2(5))
    assert ndcg([3], U) == pytest.approx(expected, abs=1e-12)
    assert ndcg([3, 3, 9], U) == ndcg([3], U)
    # an empty ranking is the original order
    assert ndcg([], U) == pytest.approx(dcg([0.1, 0.2, 0.9, 0.4]) / dcg([0.9, 0.4, 0.2, 0.1]))


def test_edge_cases_zero():
    assert ndcg(None, [0.3, 0.9]) == 0.0          # parse failure
    assert ndcg([1], [0.9]) == 0.0                # < 2 candidates
    assert ndcg([], []) == 0.0
    assert ndcg([2, 1, 3], [0.0, 0.0, 0.0]) == 0.0  # all-zero gains
    assert ndcg([2, 1], [0.0, 0.7]) == 1.0
    assert ndcg([1, 2], [0.0, 0.7]) == pytest.approx(0.6309298, abs=1e-7)  # (0.7/log2 3) / 0.7


def test_bad_gains():
    with pytest.raises(ValueError, match="finite"):
        ndcg([1, 2], [float("nan"), 1.0])
    with pytest.raises(ValueError, match=">= 0"):
        ndcg([1, 2], [-0.1, 1.0])
