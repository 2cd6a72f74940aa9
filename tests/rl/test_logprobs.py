"""Chunked logprobs: alignment, temperature, truncation, numerics, memory (PITFALLS 4-9).

Calls go through one jitted wrapper: eager calls would compile every primitive separately.
"""
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.rl import losses
from skillax.rl.logprobs import logprobs_from_logits, token_logprobs, truncation_mask
from tests.rl import toy


@functools.partial(jax.jit, static_argnames=("chunk_size", "temperature", "top_k", "top_p", "renormalize"))
def _lp(h, w, y, **kw):
    return token_logprobs(h, w, y, **kw)


def _rand(B=3, T=23, D=8, V=50, seed=0, dtype=jnp.float32):
    rng = np.random.default_rng(seed)
    h = jnp.asarray(rng.standard_normal((B, T, D)), dtype)
    w = jnp.asarray(rng.standard_normal((D, V)), dtype)
    y = jnp.asarray(rng.integers(0, V, (B, T)), jnp.int32)
    return h, w, y


def test_hand_worked_alignment():
    # head = identity (D = V = 3); hidden[t-1] sets the distribution of tokens[t].
    w = jnp.eye(3)
    h = jnp.array([[[0.0, math.log(2.0), 0.0],   # predicts t=1: p = (.25, .5, .25)
                    [math.log(3.0), 0.0, 0.0],   # predicts t=2: p = (.6, .2, .2)
                    [0.0, 0.0, 50.0]]])          # predicts nothing (last position)
    y = jnp.array([[2, 1, 2]])
    lp, ent = _lp(h, w, y, chunk_size=1)
    np.testing.assert_allclose(lp[0], [0.0, math.log(0.5), math.log(0.2)], atol=1e-6)
    H1 = -(0.5 * math.log(0.25) + 0.5 * math.log(0.5))
    H2 = -(0.6 * math.log(0.6) + 0.4 * math.log(0.2))
    np.testing.assert_allclose(ent[0], [0.0, H1, H2], atol=1e-6)


@pytest.mark.parametrize("chunk", [1, 7, 100])
def test_chunked_equals_unchunked(chunk):
    # PITFALLS 9: chunked equals unchunked [<= 1e-6], values and gradients.
    # Inputs on a 1/8 grid make every logit exact in fp32 whatever order the matmul of a given
    # shape sums in, so this isolates the chunking logic (random fp32 inputs differ by the
    # matmul's own ulp-level rounding per shape, ~1e-6 on logits of size ~10; see below).
    h, w, y = _rand()
    h, w = jnp.round(h * 4) / 8, jnp.round(w * 4) / 8
    ref_lp, ref_ent = logprobs_from_logits(jnp.einsum("btd,dv->btv", h, w), y)
    lp, ent = _lp(h, w, y, chunk_size=chunk)
    lp0, ent0 = _lp(h, w, y, chunk_size=None)
    for a, b in ((lp, lp0), (ent, ent0), (lp, ref_lp), (ent, ref_ent)):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)

    def f(h, w, c):
        lp, ent = token_logprobs(h, w, y, chunk_size=c)
        return jnp.sum(lp * jnp.arange(lp.shape[1])) + 0.1 * jnp.sum(ent)
    gf = jax.jit(jax.grad(f, argnums=(0, 1)), static_argnums=2)
    g, g0 = gf(h, w, chunk), gf(h, w, None)
    for a, b in zip(g, g0):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-6)
    # random (off-grid) fp32 inputs: equal up to fp32 matmul rounding
    h, w, y = _rand(seed=1)
    h = h / math.sqrt(h.shape[-1]) * 2
    for a, b in zip(_lp(h, w, y, chunk_size=chunk), _lp(h, w, y, chunk_size=None)):
        np.testing.assert_allclose(a, b, atol=3e-6, rtol=0)


def _temp_bytes(fn, *args):
    return jax.jit(fn).lower(*args).compile().memory_analysis().temp_size_in_bytes


@pytest.mark.parametrize("chunk", [4, 100])
def test_masked_chunks_equal_dense_where_used_and_skip_the_rest(chunk):
    # token_logprobs(mask=...): on every position the mask names, values and gradients equal
    # the dense call; a chunk no row needs returns 0 (skipped); a loss that reads only masked
    # positions has the same gradient. Rows: the mask covers targets 17..20 of row 0 and
    # 13..15 of row 2 (a row with no loss position at all is row 1), so with chunk 4 the
    # chunks of targets 1-4, 5-8, 9-12 and 21-22 are skipped.
    h, w, y = _rand()
    h, w = jnp.round(h * 4) / 8, jnp.round(w * 4) / 8
    mask = np.zeros(y.shape, bool)
    mask[0, 17:21] = True
    mask[2, 13:16] = True
    mask = jnp.asarray(mask)
    lp, ent = _lp(h, w, y, chunk_size=chunk)
    lpm, entm = jax.jit(functools.partial(token_logprobs, chunk_size=chunk, mask=mask))(h, w, y)
    np.testing.assert_allclose(np.where(mask, lpm, 0), np.where(mask, lp, 0), atol=1e-6, rtol=0)
    np.testing.assert_allclose(np.where(mask, entm, 0), np.where(mask, ent, 0), atol=1e-6, rtol=0)
    if chunk == 4:
        assert np.all(np.asarray(lpm)[:, 1:13] == 0) and np.all(np.asarray(entm)[:, 21:] == 0)
        assert np.any(np.asarray(lp)[:, 1:13] != 0)           # the dense call did compute them

    def loss(h, w, m):
        lp, ent = token_logprobs(h, w, y, chunk_size=chunk, mask=m)
        return jnp.sum(jnp.where(mask, lp + 0.1 * ent, 0.0))
    g = jax.jit(jax.grad(lambda h, w: loss(h, w, None), argnums=(0, 1)))(h, w)
    gm = jax.jit(jax.grad(lambda h, w: loss(h, w, mask), argnums=(0, 1)))(h, w)
    for a, b in zip(g, gm):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="mask must be"):
        token_logprobs(h, w, y, mask=mask[:, 1:])


def test_peak_memory_follows_chunk():
    B, T, D, V = 2, 257, 16, 4096
    h = jax.ShapeDtypeStruct((B, T, D), jnp.float32)
    w = jax.ShapeDtypeStruct((D, V), jnp.float32)
    y = jax.ShapeDtypeStruct((B, T), jnp.int32)
    full = B * (T - 1) * V * 4  # 8.4 MB of fp32 logits

    def grad(c):
        return jax.grad(lambda h, w, y: jnp.sum(token_logprobs(h, w, y, chunk_size=c)[0]), argnums=(0, 1))
    t_full = _temp_bytes(grad(None), h, w, y)
    assert t_full >= full                            # the unchunked backward holds the logits
    for c in (4, 16, 64):
        chunk_logits = B * c * V * 4
        t = _temp_bytes(grad(c), h, w, y)
        # measured 4.1-4.5 chunk-logits buffers (logits, log-softmax, their cotangents)
        assert t <= 5 * chunk_logits, (c, t, chunk_logits)


def test_pitfall9_qwen3_size_compiles_within_a_chunk():
    # 8 x 4096 tokens x 151,936 vocab: full fp32 logits would be ~19.9 GB.
    B, T, D, V = 8, 4096, 1024, 151936
    assert round(B * T * V * 4 / 1e9, 1) == 19.9
    h = jax.ShapeDtypeStruct((B, T, D), jnp.bfloat16)
    w = jax.ShapeDtypeStruct((D, V), jnp.bfloat16)
    y = jax.ShapeDtypeStruct((B, T), jnp.int32)
    f = jax.grad(lambda h, w, y: jnp.sum(token_logprobs(h, w, y, chunk_size=256)[0]), argnums=(0, 1))
    t = _temp_bytes(f, h, w, y)
    chunk_logits = B * 256 * V * 4  # 1.24 GB
    assert t < 5 * chunk_logits, t / 1e9  # measured 5.8 GB: ~4.7 chunk buffers, vs 19.9 GB


def test_pitfall4_5_greedy_sample_teacher_forced():
    params = toy.init(1)
    prompt = toy.prompts(2, 4, 5)
    toks, s_lp = toy.sample(params, prompt, 12, jax.random.key(3), greedy=True)
    lp, _ = _lp(toy.hidden(params, toks), params["head"], toks, chunk_size=5)
    t_lp = lp[:, 5:]  # completion tokens
    assert float(jnp.max(jnp.abs(t_lp - s_lp))) < 1e-5                 # PITFALLS 4
    assert float(jnp.mean(jnp.abs(t_lp - s_lp))) < 1e-4                # PITFALLS 5
    # an off-by-one (logits at t instead of t-1) would be far off
    z = np.asarray(toy.hidden(params, toks) @ params["head"], np.float64)
    z = z - np.log(np.exp(z).sum(-1, keepdims=True))
    lp_wrong = np.take_along_axis(z, np.asarray(toks)[..., None], -1)[..., 0][:, 5:]
    assert np.mean(np.abs(lp_wrong - np.asarray(s_lp))) > 0.5


_ppo = jax.jit(losses.ppo_clip_loss)


def _step0_ratio(params, toks, s_lp, P, **kw):
    lp, _ = _lp(toy.hidden(params, toks), params["head"], toks, chunk_size=8, **kw)
    _, st = _ppo(lp[:, P:], s_lp, jnp.ones(toks.shape[0]))
    return float(jnp.mean(st["ratio"])), float(jnp.mean(st["clipped"]))


def test_pitfall5_6_temperature_belongs_to_policy():
    params = toy.init(4)
    P = 4
    prompt = toy.prompts(5, 16, P)
    toks, s_lp = toy.sample(params, prompt, 16, jax.random.key(6), temperature=0.6)
    ratio, clip = _step0_ratio(params, toks, s_lp, P, temperature=0.6)
    assert abs(ratio - 1.0) < 1e-5 and clip == 0.0
    # A trainer at T = 1 is off-policy. (Its *mean* ratio stays near 1 -- E_q[p/q] = 1 for any
    # p, q -- so the symptom shows in the per-token ratios and the clip fraction.)
    lp1, _ = _lp(toy.hidden(params, toks), params["head"], toks, temperature=1.0)
    log_ratio = lp1[:, P:] - s_lp
    wrong, wrong_clip = _step0_ratio(params, toks, s_lp, P, temperature=1.0)
    print(f"T=1 trainer on T=0.6 rollouts: mean ratio {wrong:.3f}, clip frac {wrong_clip:.3f}, "
          f"mean |log ratio| {float(jnp.mean(jnp.abs(log_ratio))):.3f}")
    assert float(jnp.mean(jnp.abs(log_ratio))) > 0.1 and wrong_clip > 0.1


def test_pitfall7_truncated_sampling():
    params = toy.init(7)
    P = 4
    prompt = toy.prompts(8, 16, P)
    toks, s_lp = toy.sample(params, prompt, 16, jax.random.key(9), top_p=0.9)
    # refused unless renormalize=True
    with pytest.raises(ValueError, match="PITFALLS 7"):
        token_logprobs(toy.hidden(params, toks), params["head"], toks, top_p=0.9)
    ratio, clip = _step0_ratio(params, toks, s_lp, P, top_p=0.9, renormalize=True)
    assert abs(ratio - 1.0) < 1e-5 and clip == 0.0  # mean ratio = 1 at top-p 0.9


def test_pitfall7_ratio_equals_kept_mass():
    # one position, V = 8: p = (0.17, 0.83/7 x 7); top-k = 1 keeps token 0 with mass 0.17.
    probs = np.array([0.17] + [0.83 / 7] * 7)
    h = jnp.asarray(np.log(probs))[None, None, :].repeat(2, axis=1)   # (1, 2, 8)
    w = jnp.eye(8)
    y = jnp.array([[0, 0]])
    assert bool(truncation_mask(h[0, 0], top_k=1)[0]) and int(truncation_mask(h[0, 0], top_k=1).sum()) == 1
    sampler_lp = 0.0  # log 1: renormalised over the kept set
    full, _ = _lp(h, w, y)                       # untruncated trainer
    np.testing.assert_allclose(np.exp(full[0, 1] - sampler_lp), 0.17, atol=1e-6)
    renorm, _ = _lp(h, w, y, top_k=1, renormalize=True)
    np.testing.assert_allclose(np.exp(renorm[0, 1] - sampler_lp), 1.0, atol=1e-6)


def test_top_p_mask_hand_worked():
    logits = jnp.log(jnp.array([0.5, 0.3, 0.15, 0.05]))
    np.testing.assert_array_equal(truncation_mask(logits, top_p=0.9), [1, 1, 1, 0])  # 0.5+0.3 < 0.9
    np.testing.assert_array_equal(truncation_mask(logits, top_p=0.8), [1, 1, 0, 0])
    np.testing.assert_array_equal(truncation_mask(logits, top_p=0.5), [1, 0, 0, 0])
    np.testing.assert_array_equal(truncation_mask(logits, top_k=2, top_p=0.9), [1, 1, 0, 0])


def test_pitfall8_bf16_head_error_bound():
    # log_softmax in fp32 for bf16 inputs; real vocabulary size (151,936), 128 positions.
    # Recorded bound: bf16 vs fp32 per-token logprob error, max < 0.1 nats, mean < 0.02.
    B, T, D, V = 1, 128, 256, 151936
    h, w, y = _rand(B, T, D, V, seed=3)
    h = h / math.sqrt(D) * 4
    lp32, _ = _lp(h, w, y, chunk_size=64)
    lp16, _ = _lp(h.astype(jnp.bfloat16), w.astype(jnp.bfloat16), y, chunk_size=64)
    assert lp16.dtype == jnp.float32
    err = np.abs(np.asarray(lp16 - lp32))[:, 1:]
    print(f"bf16 vs fp32 logprob error: max {err.max():.4f}, mean {err.mean():.5f}")
    assert err.max() < 0.1 and err.mean() < 0.02
    # the bf16 path itself is exact fp32 math on the bf16-rounded inputs (fp32 softmax)
    lp_r, _ = _lp(h.astype(jnp.bfloat16).astype(jnp.float32),
                             w.astype(jnp.bfloat16).astype(jnp.float32), y, chunk_size=64)
    assert float(jnp.max(jnp.abs(lp16 - lp_r))) < 1e-3


def test_bad_input():
    h, w, y = _rand()
    with pytest.raises(ValueError, match="shape mismatch"):
        token_logprobs(h, w, y[:, :-1])
    with pytest.raises(ValueError, match="temperature"):
        token_logprobs(h, w, y, temperature=0.0)
    with pytest.raises(ValueError, match="chunk_size"):
        token_logprobs(h, w, y, chunk_size=0)
    lp, ent = token_logprobs(h[:, :1], w, y[:, :1])
    assert lp.shape == (3, 1) and float(jnp.abs(lp).sum()) == 0.0
