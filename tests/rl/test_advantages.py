"""Advantages: PITFALLS 1-2 with their numbers, group ids, multi-objective, bad input."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.rl import advantages as A


def test_pitfall2_std_convention_g2():
    # G = 2, rewards (0, 1): +-0.7071 with ddof = 1, +-1.0 with ddof = 0.
    np.testing.assert_allclose(A.grpo_advantages([0.0, 1.0], [0, 0], ddof=1), [-0.70710678, 0.70710678], atol=2e-6)
    np.testing.assert_allclose(A.grpo_advantages([0.0, 1.0], [0, 0], ddof=0), [-1.0, 1.0], atol=3e-6)
    # the default is ddof = 1
    np.testing.assert_array_equal(A.grpo_advantages([0.0, 1.0], [0, 0]), A.grpo_advantages([0.0, 1.0], [0, 0], ddof=1))


@pytest.mark.parametrize("value", [0.35, 0.1, 1 / 3, 0.7, 1e8 + 0.1])
def test_pitfall1_zero_variance_groups_exact_zero(value):
    r = np.full(8, value)
    for est in ("grpo", "mean", "drgrpo"):
        a = A.group_advantages(r, np.zeros(8, int), est)
        assert np.all(a == 0.0) and np.all(np.isfinite(a))
    # the residue is real: the plain fp32 formula (sequential sum) without the guard gives
    # r - mean = 2.98e-8 and A = 0.0289 for 0.35 x 8, not 0.
    rf = np.full(8, np.float32(0.35), np.float32)
    s = np.float32(0)
    for x in rf:
        s = np.float32(s + x)
    d = rf - s / np.float32(8)
    naive = d / (np.sqrt((d * d).sum() / 7) + np.float32(1e-6))
    np.testing.assert_allclose(naive[0], 0.02888, atol=1e-4)
    aj = A.group_advantages_jnp(jnp.asarray(rf), jnp.zeros(8, jnp.int32), 1)
    assert np.all(np.asarray(aj) == 0.0)


def test_pitfall1_bessel_bound_7_vs_1_non_dyadic():
    G = 8
    bound = (G - 1) / math.sqrt(G)
    assert round(bound, 3) == 2.475
    r = np.array([0.35] * 7 + [0.9])
    a = A.grpo_advantages(r, np.zeros(G, int), ddof=1)
    assert np.max(np.abs(a)) <= bound
    np.testing.assert_allclose(np.abs(a[-1]), bound, rtol=1e-4)  # attained up to the eps
    np.testing.assert_allclose(a[:7], -bound / 7, rtol=1e-4)
    # the jittable twin agrees and also respects the bound
    aj = np.asarray(A.group_advantages_jnp(jnp.asarray(r, jnp.float32), jnp.zeros(G, jnp.int32), 1))
    assert np.max(np.abs(aj)) <= bound + 1e-6
    np.testing.assert_allclose(aj, a, atol=1e-5)
    # random groups never exceed the bound
    rng = np.random.default_rng(0)
    for _ in range(50):
        rr = rng.choice([0.0, 0.35, 0.7, 1.0], size=G)
        assert np.max(np.abs(A.grpo_advantages(rr, np.zeros(G, int)))) <= bound


def test_groups_by_id_not_position():
    # two interleaved groups: ids [0,1,0,1]
    r = np.array([0.0, 5.0, 1.0, 5.0])
    a = A.grpo_advantages(r, [0, 1, 0, 1], ddof=0)
    np.testing.assert_allclose(a, [-1.0, 0.0, 1.0, 0.0], atol=3e-6)
    perm = np.array([2, 0, 3, 1])
    np.testing.assert_allclose(A.grpo_advantages(r[perm], np.array([0, 1, 0, 1])[perm], ddof=0), a[perm])


def test_mean_only_and_drgrpo():
    r = [1.0, 0.0, 0.0, 0.5, 2.0, 2.0]
    g = [0, 0, 0, 0, 1, 1]
    np.testing.assert_allclose(A.mean_advantages(r, g), [0.625, -0.375, -0.375, 0.125, 0.0, 0.0], atol=1e-7)
    np.testing.assert_array_equal(A.group_advantages(r, g, "drgrpo"), A.mean_advantages(r, g))
    np.testing.assert_array_equal(A.group_advantages(r, g, "raw"), np.asarray(r, np.float32))


def test_jnp_twin_matches_host_and_jits():
    rng = np.random.default_rng(1)
    r = rng.normal(size=24).astype(np.float32)
    g = rng.integers(0, 5, size=24)
    g[:5] = np.arange(5)
    f = jax.jit(A.group_advantages_jnp, static_argnums=(2, 3))
    for est in ("grpo", "mean", "raw"):
        np.testing.assert_allclose(np.asarray(f(r, g, 5, est)), A.group_advantages(r, g, est), atol=2e-5)


def test_singleton_group_is_zero():
    np.testing.assert_array_equal(A.grpo_advantages([3.0, 0.0, 1.0], [0, 1, 1], ddof=1)[:1], [0.0])


def test_multi_objective_separately_normalised():
    # Skill1: util GRPO on r, rerank raw NDCG, distil GRPO on r - max U, each on its own.
    r = {"util": [1.0, 0.0, 1.0, 1.0], "rerank": [0.8, 0.5, 1.0, 0.0], "distil": [0.5, -0.4, 0.3, 0.3]}
    out = A.multi_objective_advantages(r, [0, 0, 0, 0], {"util": "grpo", "rerank": "raw", "distil": "grpo"})
    np.testing.assert_allclose(out["util"], [0.5, -1.5, 0.5, 0.5], atol=1e-5)  # mean .75, std .5
    np.testing.assert_allclose(out["rerank"], [0.8, 0.5, 1.0, 0.0], atol=1e-7)
    d = np.array([0.5, -0.4, 0.3, 0.3])
    np.testing.assert_allclose(out["distil"], (d - d.mean()) / d.std(ddof=1), atol=1e-5)
    with pytest.raises(ValueError, match="objective 'distil'"):
        A.multi_objective_advantages({"distil": [np.nan]}, [0], {"distil": "grpo"})


@pytest.mark.parametrize("rewards,gids,match", [
    ([0.0, np.nan], [0, 0], "non-finite rewards at rows \\[1\\]"),
    ([0.0, np.inf], [0, 0], "non-finite"),
    ([], [], "empty batch"),
    ([0.0, 1.0], [0, 2], "empty groups .* \\[1\\]"),
    ([0.0, 1.0], [0], "same shape"),
    ([0.0, 1.0], [0.0, 0.0], "integers"),
    ([0.0, 1.0], [-1, 0], ">= 0"),
])
def test_bad_input(rewards, gids, match):
    with pytest.raises(ValueError, match=match):
        A.grpo_advantages(rewards, np.asarray(gids))


def test_bad_estimator_and_ddof():
    with pytest.raises(ValueError, match="unknown advantage estimator"):
        A.group_advantages([1.0], [0], "ppo")
    with pytest.raises(ValueError, match="ddof"):
        A.grpo_advantages([1.0], [0], ddof=2)
    with pytest.raises(ValueError, match="empty groups"):
        A.grpo_advantages([1.0, 2.0], [0, 0], num_groups=2)
