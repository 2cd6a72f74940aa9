"""Policy losses, KL estimators, aggregation (PITFALLS 3, 11-14) and the objectives combiner."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.rl import aggregation as agg
from skillax.rl import kl, losses, masks
from skillax.rl import objectives as obj
from skillax.rl.advantages import grpo_advantages


# --- PITFALLS 13: aggregation modes pinned by a toy batch ---------------------------------
def _toy13():
    loss = jnp.zeros((2, 10)).at[0, 1].set(1.0)                 # row A: 1 token, loss 1
    mask = jnp.zeros((2, 10)).at[0, 1].set(1).at[1, 1:10].set(1)  # row B: 9 tokens, loss 0
    return loss, mask


@pytest.mark.parametrize("mode,expected", [
    ("token_mean", 0.1), ("seq_mean_token_mean", 0.5), ("seq_mean_token_sum", 0.5),
    ("seq_mean_token_sum_norm", 1 / 18)])
def test_pitfall13_aggregation_toy(mode, expected):
    loss, mask = _toy13()
    s, d = agg.aggregate(loss, mask, mode, max_len=9)
    assert float(s / d) == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("mode", agg.MODES)
def test_micro_batches_equal_one_batch(mode):
    rng = np.random.default_rng(0)
    loss = jnp.asarray(rng.normal(size=(6, 12)), jnp.float32)
    mask = jnp.asarray(rng.random((6, 12)) < 0.5).at[3].set(False)  # row 3 empty
    s, d = agg.aggregate(loss, mask, mode, max_len=12)
    parts = [agg.aggregate(loss[i:i + 2], mask[i:i + 2], mode, max_len=12) for i in (0, 2, 4)]
    np.testing.assert_allclose(sum(p[0] for p in parts) / sum(p[1] for p in parts), s / d, rtol=1e-6)


def test_empty_mask_is_zero_not_nan():
    s, d = agg.aggregate(jnp.full((2, 3), jnp.nan), jnp.zeros((2, 3)), "token_mean")
    assert float(s) == 0.0 and float(d) == 0.0 and float(agg.safe_ratio(s, d)) == 0.0
    zero_mask = jnp.zeros((2, 3))
    g = jax.grad(lambda x: agg.safe_ratio(*agg.aggregate(x, zero_mask, "seq_mean_token_mean")))(jnp.ones((2, 3)))
    assert np.all(np.asarray(g) == 0.0)


def test_bad_mode():
    with pytest.raises(ValueError, match="unknown aggregation"):
        agg.aggregate(jnp.ones((1, 2)), jnp.ones((1, 2)), "mean")
    with pytest.raises(ValueError, match="L_max"):
        agg.denominator(jnp.ones((1, 2)), "seq_mean_token_sum_norm")


# --- PPO clip ----------------------------------------------------------------------------
def test_ppo_clip_hand_values():
    old = jnp.zeros((1, 5))
    ratio = jnp.array([[1.5, 0.5, 0.5, 1.1, 5.0]])
    adv = jnp.array([[1.0, 1.0, -1.0, 1.0, -1.0]])
    loss, st = losses.ppo_clip_loss(jnp.log(ratio), old, adv, eps_low=0.2, eps_high=0.2)
    np.testing.assert_allclose(loss[0], [-1.2, -0.5, 0.8, -1.1, 5.0], rtol=1e-6)
    np.testing.assert_array_equal(st["clipped"][0], [1, 0, 1, 0, 0])
    # clip-higher: eps_high = 0.28
    loss_h, _ = losses.ppo_clip_loss(jnp.log(ratio), old, adv, eps_low=0.2, eps_high=0.28)
    np.testing.assert_allclose(loss_h[0, 0], -1.28, rtol=1e-6)
    # dual clip c = 3 caps the A < 0, ratio 5 token at -c * A = 3
    loss_d, st_d = losses.ppo_clip_loss(jnp.log(ratio), old, adv, dual_clip=3.0)
    np.testing.assert_allclose(loss_d[0], [-1.2, -0.5, 0.8, -1.1, 3.0], rtol=1e-6)
    np.testing.assert_array_equal(st_d["dual_clipped"][0], [0, 0, 0, 0, 1])
    # clipped tokens have zero gradient; unclipped ones d(-rA)/dlogp = -rA
    g = jax.grad(lambda lp: jnp.sum(losses.ppo_clip_loss(lp, old, adv)[0]))(jnp.log(ratio))
    np.testing.assert_allclose(g[0], [0.0, -0.5, 0.0, -1.1, 5.0], rtol=1e-6)
    g_d = jax.grad(lambda lp: jnp.sum(losses.ppo_clip_loss(lp, old, adv, dual_clip=3.0)[0]))(jnp.log(ratio))
    assert float(g_d[0, 4]) == 0.0


def test_log_ratio_clamp_keeps_finite():
    loss, st = losses.ppo_clip_loss(jnp.array([[0.0, -200.0]]), jnp.array([[-200.0, 0.0]]), jnp.array([-1.0]))
    assert np.all(np.isfinite(loss)) and float(st["ratio"][0, 0]) == pytest.approx(math.exp(20), rel=1e-5)
    with pytest.raises(ValueError, match="dual_clip"):
        losses.ppo_clip_loss(jnp.zeros((1, 1)), jnp.zeros((1, 1)), jnp.ones(1), dual_clip=0.5)
    with pytest.raises(ValueError, match="advantages must have shape"):
        losses.ppo_clip_loss(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.ones(3))


def test_reinforce():
    lp = jnp.array([[0.0, -1.0, -2.0], [0.0, -0.5, -0.5]])
    A = jnp.array([0.8, 0.2])
    mask = jnp.array([[0, 1, 1], [0, 1, 1]])
    s, d = agg.aggregate(losses.reinforce_loss(lp, A, baseline=0.5), mask, "seq_mean_token_sum")
    # row 0: -(0.3)(-3) = 0.9; row 1: -(-0.3)(-1) = -0.3; mean over 2 rows = 0.3
    assert float(s / d) == pytest.approx(0.3)
    g = jax.grad(lambda x: jnp.sum(losses.reinforce_loss(x, A)))(lp)
    np.testing.assert_allclose(g, [[-0.8] * 3, [-0.2] * 3])


# --- KL (PITFALLS 14) ----------------------------------------------------------------------
def test_kl_hand_values():
    lp, ref = jnp.array([[-1.0]]), jnp.array([[-2.0]])  # log r = -1
    assert float(kl.kl_penalty(lp, ref, "k1")[0, 0]) == pytest.approx(1.0)
    assert float(kl.kl_penalty(lp, ref, "k2")[0, 0]) == pytest.approx(0.5)
    assert float(kl.kl_penalty(lp, ref, "k3")[0, 0]) == pytest.approx(math.exp(-1))  # e^-1 - 1 + 1
    huge = kl.kl_penalty(jnp.array([[-500.0]]), jnp.array([[0.0]]), "k3")
    assert float(huge[0, 0]) == 10.0  # exponent clamped at 20, value at 10
    with pytest.raises(ValueError, match="unknown KL"):
        kl.kl_penalty(lp, ref, "k4")


def test_pitfall14_k2_gradient_is_exact_kl_gradient():
    theta = jnp.array([1.0, 0.0, -1.0, 0.5])
    ref_logits = jnp.array([0.0, 0.3, 0.0, -0.2])
    ref_lp = jax.nn.log_softmax(ref_logits)

    def exact_kl(th):  # KL(pi || ref)
        lp = jax.nn.log_softmax(th)
        return jnp.sum(jnp.exp(lp) * (lp - ref_lp))

    def expected_estimator_grad(est):
        # on-policy: E_{x ~ pi}[grad k(x)] with pi held fixed (samples do not move)
        pi = jax.lax.stop_gradient(jnp.exp(jax.nn.log_softmax(theta)))
        f = lambda th: jnp.sum(pi * kl.kl_penalty(jax.nn.log_softmax(th)[None], ref_lp[None], est)[0])  # noqa
        return jax.grad(f)(theta)

    g_exact = jax.grad(exact_kl)(theta)
    np.testing.assert_allclose(expected_estimator_grad("k2"), g_exact, atol=1e-6)
    np.testing.assert_allclose(expected_estimator_grad("k1"), 0.0, atol=1e-6)  # E[grad log pi] = 0
    g3 = expected_estimator_grad("k3")
    assert float(jnp.max(jnp.abs(g3 - g_exact))) > 1e-2                      # k3: biased gradient
    g_rev = jax.grad(lambda th: jnp.sum(jnp.exp(ref_lp) * (ref_lp - jax.nn.log_softmax(th))))(theta)
    np.testing.assert_allclose(g3, g_rev, atol=1e-6)                          # = grad KL(ref || pi)
    # the values of k1 and k3 are unbiased: E_pi[k] = KL
    pi = jnp.exp(jax.nn.log_softmax(theta))
    for est in ("k1", "k3"):
        v = jnp.sum(pi * kl.kl_penalty(jax.nn.log_softmax(theta)[None], ref_lp[None], est)[0])
        assert float(v) == pytest.approx(float(exact_kl(theta)), rel=1e-5)


# --- objectives combiner, PITFALLS 3 -------------------------------------------------------
def _batch(B=4, T=6, seed=0, adv=None):
    rng = np.random.default_rng(seed)
    valid = np.ones((B, T), bool)
    valid[0, -2:] = False
    mask = valid.copy()
    mask[:, :2] = False
    return {
        "tokens": np.zeros((B, T), np.int32), "positions": np.tile(np.arange(T), (B, 1)),
        "valid": valid, "old_logprobs": rng.normal(-1.0, 0.1, (B, T)).astype(np.float32),
        "ref_logprobs": rng.normal(-1.0, 0.3, (B, T)).astype(np.float32),
        "objectives": {"main": {"loss_mask": mask.astype(np.float32),
                                "advantages": np.asarray(rng.normal(size=B) if adv is None else adv, np.float32)}},
    }


def _loss_fn(objs, batch, dens):
    def f(logp):
        return obj.objectives_loss(logp, jnp.zeros_like(logp), batch, objs, dens, batch["ref_logprobs"])[0]
    return f


def test_pitfall3_zero_variance_groups_keep_vs_drop():
    # two groups of 2: group 0 rewards (1, 1) all equal, group 1 (0, 1)
    rewards, gids = np.array([1.0, 1.0, 0.0, 1.0]), np.array([0, 0, 1, 1])
    A = grpo_advantages(rewards, gids)
    np.testing.assert_allclose(A, [0.0, 0.0, -0.7071, 0.7071], atol=1e-4)
    cfg = {"main": obj.ObjectiveConfig(kl_coef=0.1, kl_estimator="k2", entropy_coef=0.0)}
    batch = _batch(adv=A)
    logp = jnp.asarray(batch["old_logprobs"])
    # keep (default): the all-equal group still gets a KL gradient and counts in the denominator
    dens = obj.denominators(batch, cfg)
    assert float(dens["main"]) == 14.0                       # 2 + 4 + 4 + 4 tokens
    g = jax.grad(_loss_fn(cfg, batch, dens))(logp)
    assert float(jnp.max(jnp.abs(g[:2]))) > 1e-3
    # drop: their mask is zeroed -> no gradient at all and not counted
    dropped = dict(batch, objectives={"main": dict(batch["objectives"]["main"], loss_mask=masks.drop_zero_variance(
        batch["objectives"]["main"]["loss_mask"], rewards, gids))})
    dens_d = obj.denominators(dropped, cfg)
    assert float(dens_d["main"]) == 8.0
    g_d = jax.grad(_loss_fn(cfg, dropped, dens_d))(logp)
    assert float(jnp.max(jnp.abs(g_d[:2]))) == 0.0 and float(jnp.max(jnp.abs(g_d[2:]))) > 1e-3
    # without KL (and entropy) the all-equal group contributes no gradient either way
    cfg0 = {"main": obj.ObjectiveConfig(entropy_coef=0.0)}
    assert float(jnp.max(jnp.abs(jax.grad(_loss_fn(cfg0, batch, obj.denominators(batch, cfg0)))(logp)[:2]))) == 0.0


@pytest.mark.parametrize("mode", agg.MODES)
def test_objectives_micro_batched_gradient_equals_full(mode):
    cfg = {"main": obj.ObjectiveConfig(aggregation=mode, max_len=6, kl_coef=0.05, entropy_coef=0.01),
           "aux": obj.ObjectiveConfig(weight=0.3, loss="reinforce", aggregation="seq_mean_token_sum")}
    b = _batch(B=4, seed=3)
    aux_mask = np.zeros((4, 6), np.float32)
    aux_mask[2, 3:] = 1
    b["objectives"]["aux"] = {"loss_mask": aux_mask, "advantages": np.array([0, 0, 0.7, 0], np.float32)}
    rng = np.random.default_rng(4)
    logp = jnp.asarray(b["old_logprobs"] + rng.normal(0, 0.3, (4, 6)), jnp.float32)
    ent = jnp.asarray(rng.random((4, 6)), jnp.float32)
    dens = obj.denominators(b, cfg)

    @jax.jit
    def f(lp, e, bb):
        return obj.objectives_loss(lp, e, bb, cfg, dens, jnp.asarray(bb["ref_logprobs"]))

    full, sums = f(logp, ent, b)
    g = jax.grad(lambda lp: f(lp, ent, b)[0])(logp)
    sl = lambda x, i: jax.tree.map(lambda a: a[i:i + 2], x)  # noqa: E731
    parts = [f(logp[i:i + 2], ent[i:i + 2], sl(b, i)) for i in (0, 2)]
    assert float(sum(p[0] for p in parts)) == pytest.approx(float(full), rel=1e-6)
    g_parts = jnp.concatenate([jax.grad(lambda lp, i=i: f(lp, ent[i:i + 2], sl(b, i))[0])(logp[i:i + 2])
                               for i in (0, 2)])
    np.testing.assert_allclose(g_parts, g, atol=1e-7)
    m = obj.finalize_metrics(jax.tree.map(lambda *x: sum(x), parts[0][1], parts[1][1]), dens)
    m_full = obj.finalize_metrics(sums, dens)
    for k in m:
        assert float(m[k]) == pytest.approx(float(m_full[k]), rel=1e-5, abs=1e-7), k


def test_empty_objective_counted_zero_never_nan():
    cfg = {"main": obj.ObjectiveConfig(), "none": obj.ObjectiveConfig(weight=0.3, aggregation="seq_mean_token_mean")}
    b = _batch()
    b["objectives"]["none"] = {"loss_mask": np.zeros((4, 6), np.float32), "advantages": np.zeros(4, np.float32)}
    b["old_logprobs"][0, -2:] = np.nan  # padding: must not leak
    dens = obj.denominators(b, cfg)
    logp = jnp.asarray(b["old_logprobs"])  # NaN at the padding positions too
    loss, sums = obj.objectives_loss(logp, jnp.zeros_like(logp), b, cfg, dens)
    g = jax.grad(lambda lp: obj.objectives_loss(lp, jnp.zeros_like(lp), b, cfg, dens)[0])(logp)
    m = obj.finalize_metrics(sums, dens)
    assert np.isfinite(float(loss)) and np.all(np.isfinite(g))
    assert float(m["none/tokens"]) == 0.0 and float(m["none/loss"]) == 0.0
    assert all(np.isfinite(float(v)) for v in m.values())
    assert float(m["main/ratio_mean"]) == pytest.approx(1.0) and float(m["main/clip_frac"]) == 0.0


def test_validate_batch_errors():
    cfg = {"main": obj.ObjectiveConfig()}
    obj.validate_batch(_batch(), cfg)
    cases = [
        (lambda b: b.__setitem__("valid", b["valid"][:, :-1]), "valid"),
        (lambda b: b["objectives"]["main"].__setitem__("advantages", np.ones(3)), "advantages shape"),
        (lambda b: b["objectives"]["main"]["loss_mask"].__setitem__((0, -1), 1), "padding"),
        (lambda b: b["objectives"]["main"]["loss_mask"].__setitem__((1, 0), 1), "position 0"),
        (lambda b: b["objectives"]["main"]["advantages"].__setitem__(1, np.nan), "non-finite advantages"),
        (lambda b: b["old_logprobs"].__setitem__((1, 3), np.inf), "non-finite old_logprobs"),
        (lambda b: b.pop("old_logprobs"), "old_logprobs"),
        (lambda b: b["objectives"].__setitem__("x", {}), "objectives"),
        # a left-padded row (padding, then tokens): the fused GPU attention would read its
        # padding silently (issue 23 item 9), so the layout is refused on every backend
        (lambda b: b["valid"].__setitem__((2, slice(0, 2)), False), r"right-padded.*rows \[2\]"),
    ]
    for mutate, match in cases:
        b = _batch()
        mutate(b)
        with pytest.raises(ValueError, match=match):
            obj.validate_batch(b, cfg)
    with pytest.raises(ValueError, match="max_len"):
        obj.ObjectiveConfig(aggregation="seq_mean_token_sum_norm")
    with pytest.raises(ValueError, match="loss must be"):
        obj.ObjectiveConfig(loss="dpo")
    assert obj.ObjectiveConfig().entropy_coef == 0.001 and obj.ObjectiveConfig().kl_coef == 0.0


def test_auto_attention_uses_cudnn_only_where_it_runs():
    """issue 23 item 9: fp32 on the GPU fell into cuDNN ("Q must be fp16/bf16"); with a KV
    cache or off the GPU the explicit masked softmax runs."""
    from skillax.models.transformer import auto_attention

    assert auto_attention(True, jnp.bfloat16, "gpu") == "cudnn"
    assert auto_attention(True, jnp.float16, "gpu") == "cudnn"
    assert auto_attention(True, jnp.float32, "gpu") == "xla"
    assert auto_attention(False, jnp.bfloat16, "gpu") == "xla"
    assert auto_attention(True, jnp.bfloat16, "cpu") == "xla"


# --- PITFALLS 11-12: masks ------------------------------------------------------------------
def test_pitfall11_truncated_row_filtered_but_reward_counts():
    rewards, gids = np.array([1.0, 0.0, 0.0, 1.0]), np.zeros(4, int)
    stop = ["eos", "eos", "stop", "length"]
    A = grpo_advantages(rewards, gids)  # mean 0.5 uses the truncated row's reward
    np.testing.assert_allclose(A, [0.866, -0.866, -0.866, 0.866], atol=1e-3)
    m = masks.overlong_filter(np.ones((4, 5)), stop)
    np.testing.assert_array_equal(m.sum(1), [5, 5, 5, 0])
    with pytest.raises(ValueError, match="unknown stop"):
        masks.overlong_filter(np.ones((1, 2)), ["max_tokens"])
    # length penalty in tokens: budget 10, buffer 4 -> 0 up to 6, -0.5 at 8, -1 at 10+
    np.testing.assert_allclose(masks.soft_overlong_penalty([6, 8, 10, 12], 10, 4), [0.0, -0.5, -1.0, -1.0])


def test_pitfall12_observation_tokens_are_context():
    # prompt | policy | observation | policy
    mask = np.array([[0, 0, 1, 1, 0, 0, 0, 1]], np.float32)
    assert masks.policy_token_counts(mask).tolist() == [3]  # 3 policy tokens, not 8
    cfg = {"main": obj.ObjectiveConfig(entropy_coef=0.01, kl_coef=0.1)}
    b = {"tokens": np.zeros((1, 8), np.int32), "positions": np.arange(8)[None], "valid": np.ones((1, 8), bool),
         "old_logprobs": np.full((1, 8), -1.0, np.float32), "ref_logprobs": np.full((1, 8), -1.5, np.float32),
         "objectives": {"main": {"loss_mask": mask, "advantages": np.array([1.0], np.float32)}}}
    dens = obj.denominators(b, cfg)
    assert float(dens["main"]) == 3.0
    g_lp, g_ent = jax.grad(lambda lp, e: obj.objectives_loss(lp, e, b, cfg, dens, b["ref_logprobs"])[0],
                           argnums=(0, 1))(jnp.full((1, 8), -1.0), jnp.ones((1, 8)))
    np.testing.assert_array_equal(np.asarray(g_lp[0]) != 0, mask[0].astype(bool))
    np.testing.assert_array_equal(np.asarray(g_ent[0]) != 0, mask[0].astype(bool))
