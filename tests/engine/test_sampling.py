"""Logit processing: hand-computed top-k / top-p / temperature values, sampling frequencies,
greedy logprob convention, and agreement with the trainer's truncation (skillax.rl.logprobs)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.engine.sampling import (SamplingParams, sample_tokens, sampling_logprobs,
                                     token_logprobs, truncation_mask)

LOGITS = jnp.array([[2.0, 1.0, 0.0, -1.0]])
# softmax([2, 1, 0, -1]) = [0.643914, 0.236883, 0.087144, 0.032059]


def _lp(t, k, p, logits=LOGITS):
    return np.asarray(sampling_logprobs(logits, jnp.float32(t), jnp.int32(k), jnp.float32(p)))[0]


def test_top_k_renormalises_over_kept():
    lp = _lp(1.0, 2, 1.0)
    np.testing.assert_allclose(lp[:2], [-0.3132617, -1.3132617], atol=1e-6)  # log_softmax([2, 1])
    assert np.all(lp[2:] < -1e20)


@pytest.mark.parametrize("p,kept", [(0.6, 1), (0.64, 1), (0.65, 2), (0.8, 2), (0.9, 3), (0.97, 4), (1.0, 4)])
def test_top_p_keeps_smallest_prefix(p, kept):
    # exclusive cumulative mass: [0, 0.6439, 0.8808, 0.9679]; keep while < p
    keep = np.asarray(truncation_mask(LOGITS, jnp.int32(0), jnp.float32(p)))[0]
    assert keep.tolist() == [True] * kept + [False] * (4 - kept)
    lp = _lp(1.0, 0, p)
    np.testing.assert_allclose(np.exp(lp[:kept]).sum(), 1.0, atol=1e-6)


def test_temperature_then_top_k_then_top_p():
    # T = 0.5: z = [4, 2, 0, -2]; probs [0.8668, 0.1173, 0.0159, 0.0021]; top_k 3, top_p 0.9
    # -> exclusive mass [0, 0.8674, 0.9848] over the top-3 renormalised -> keep 2.
    lp = _lp(0.5, 3, 0.9)
    np.testing.assert_allclose(lp[:2], [-0.126928, -2.126928], atol=1e-5)  # log_softmax([4, 2])
    assert np.all(lp[2:] < -1e20)
    np.testing.assert_allclose(_lp(0.5, 0, 1.0), jax.nn.log_softmax(LOGITS[0] / 0.5), atol=1e-6)


def test_ties_at_the_boundary_are_kept():
    keep = np.asarray(truncation_mask(jnp.array([[1.0, 1.0, 0.0]]), jnp.int32(1), jnp.float32(1.0)))
    assert keep.tolist() == [[True, True, False]]


def test_matches_trainer_truncation():
    """Same kept set as skillax.rl.logprobs.truncation_mask (the trainer's, static top_k)."""
    rl = pytest.importorskip("skillax.rl.logprobs")
    z = jax.random.normal(jax.random.key(0), (16, 300)) * 3
    z = z.at[:, 5].set(z[:, 7])  # ties
    mask = jax.jit(truncation_mask, static_argnames=("cap",))
    for k, p in [(0, 0.9), (10, 1.0), (10, 0.5), (1, 0.3), (0, 0.999), (40, 0.95), (299, 1.0)]:
        ref = np.asarray(rl.truncation_mask(z, k if k else None, p))
        for cap in (8, 32, 256):  # top-M fast path and full-sort fallback agree
            ours = mask(z, jnp.int32(k), jnp.float32(p), cap=cap)
            np.testing.assert_array_equal(np.asarray(ours), ref, err_msg=f"k={k} p={p} cap={cap}")


def test_sampling_frequencies_follow_the_truncated_distribution():
    n = 20000
    keys = jax.random.split(jax.random.key(1), n)
    logits = jnp.broadcast_to(LOGITS, (n, 4))
    tok, lp = jax.jit(sample_tokens)(keys, logits, jnp.float32(1.0), jnp.int32(0), jnp.float32(0.9))
    freq = np.bincount(np.asarray(tok), minlength=4) / n
    want = np.array([0.643914, 0.236883, 0.087144, 0.0]) / 0.967941
    np.testing.assert_allclose(freq, want, atol=0.012)
    np.testing.assert_allclose(np.asarray(lp), np.log(want[np.asarray(tok)]), atol=1e-5)


def test_greedy_is_argmax_with_untempered_full_softmax_logprob():
    keys = jax.random.split(jax.random.key(0), 2)
    logits = jnp.array([[0.5, 3.0, 1.0], [2.0, -1.0, 0.0]])
    tok, lp = sample_tokens(keys, logits, jnp.float32(0.0), jnp.int32(1), jnp.float32(0.5))
    assert np.asarray(tok).tolist() == [1, 0]
    ref = jax.nn.log_softmax(logits, axis=-1)
    np.testing.assert_allclose(np.asarray(lp), [ref[0, 1], ref[1, 0]], atol=1e-6)
    np.testing.assert_allclose(token_logprobs(logits, tok, 0.0), lp, atol=1e-6)


def test_sampling_params_validation():
    for kw, msg in [(dict(temperature=-1.0), "temperature"), (dict(temperature=float("nan")), "temperature"),
                    (dict(top_p=0.0), "top_p"), (dict(top_p=1.01), "top_p"), (dict(top_k=-2), "top_k"),
                    (dict(max_new_tokens=0), "max_new_tokens"), (dict(n=0), "n "),
                    (dict(stop_strings=[""]), "non-empty"), (dict(eos_ids=[-1]), "eos_ids"),
                    (dict(stop_token_ids=[1.5]), "stop_token_ids"), (dict(pad_id=-1), "pad_id")]:
        with pytest.raises(ValueError, match=msg):
            SamplingParams(**kw)
    assert SamplingParams(temperature=0).greedy


def test_static_modes_match_the_traced_branches():
    """sampling_mode picks the branch the lax.cond version takes; both give equal draws."""
    from skillax.engine.sampling import sampling_mode

    keys = jax.random.split(jax.random.key(3), 6)
    logits = jax.random.normal(jax.random.key(4), (6, 50)) * 3
    for kw in (dict(temperature=0.0, top_k=3), dict(temperature=0.7), dict(temperature=1.0, top_k=5),
               dict(temperature=1.0, top_p=0.8)):
        sp = SamplingParams(**kw)
        args = (keys, logits, jnp.float32(sp.temperature), jnp.int32(sp.top_k), jnp.float32(sp.top_p))
        mode = sampling_mode(sp)
        assert mode == ("greedy" if sp.temperature == 0 else "truncate" if (sp.top_k or sp.top_p < 1) else "sample")
        tok_a, lp_a = sample_tokens(*args)
        tok_s, lp_s = jax.jit(sample_tokens, static_argnames="mode")(*args, mode=mode)
        np.testing.assert_array_equal(np.asarray(tok_s), np.asarray(tok_a))
        np.testing.assert_allclose(np.asarray(lp_s), np.asarray(lp_a), atol=1e-6)
    with pytest.raises(ValueError, match="mode"):
        sample_tokens(*args, mode="beam")
