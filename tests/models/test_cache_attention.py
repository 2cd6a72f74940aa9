"""The Pallas cache-attention kernel (interpret mode off GPU) against the masked XLA path."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.models.cache_attention import _query_rows, cache_attention, pallas_attention_ok
from skillax.models.config import ModelConfig
from skillax.models.kv_cache import init_cache
from skillax.models.params import init_params
from skillax.models.transformer import _NEG, attention, forward


def _case(B=3, T=1, S=256, KV=2, G=4, Dh=32, index=149, seed=0, dtype=jnp.float32):
    """Random q/k/v; slot validity with holes (left padding, cut slots) before the chunk; the
    chunk at slots index .. index+T-1 with its own left padding in row 1; garbage after."""
    r = np.random.default_rng(seed)
    q = jnp.asarray(r.normal(size=(B, T, KV * G, Dh)), dtype)
    k = jnp.asarray(r.normal(size=(B, S, KV, Dh)), dtype)
    v = jnp.asarray(r.normal(size=(B, S, KV, Dh)), dtype)
    valid = r.random((B, S)) < 0.7
    valid[0, :100] = False               # row 0: long left padding (whole blocks masked)
    valid[:, index:index + T] = True     # the chunk
    if T > 2:
        valid[1, index:index + T // 2] = False   # row 1: a left-padded chunk
    valid[:, index + T:] = r.random((B, S - index - T)) < 0.5  # stale slots: must stay unseen
    return q, k, v, jnp.asarray(valid), index


def _reference(q, k, v, valid, index, dtype):
    """``transformer.attention`` with the forward pass's (B, T, S) cache mask."""
    T, S = q.shape[1], k.shape[1]
    causal = jnp.arange(S)[None, :] <= (index + jnp.arange(T))[:, None]
    return attention(q, k, v, causal[None] & valid[:, None, :], dtype)


def _check(out, ref, q, valid, index, atol):
    """Compare the queries that see at least one slot (padding queries' outputs are unused)."""
    T = q.shape[1]
    seen = np.asarray(valid[:, index:index + T])
    assert out.shape == q.shape and out.dtype == q.dtype
    np.testing.assert_allclose(np.asarray(out, np.float32)[seen], np.asarray(ref, np.float32)[seen],
                               atol=atol, rtol=0)


@pytest.mark.parametrize("splits", [1, 2, 4, None])
def test_decode_step_matches_masked_softmax_fp32(splits):
    q, k, v, valid, index = _case()
    out = cache_attention(q, k, v, jnp.where(valid, 0.0, _NEG), jnp.int32(index), splits=splits)
    _check(out, _reference(q, k, v, valid, index, jnp.float32), q, valid, index, 1e-5)


@pytest.mark.parametrize("T,G,KV", [(16, 4, 2), (24, 4, 2), (32, 1, 4), (8, 2, 2), (40, 8, 1)])
def test_prefill_chunk_matches_masked_softmax_fp32(T, G, KV):
    """Chunks of several query tiles (T=16 G=4: 1 tile of 64 rows; T=24: 3 tiles of 32; T=40
    G=8: 5 tiles of 64), causal inside the chunk, a left-padded row."""
    q, k, v, valid, index = _case(T=T, G=G, KV=KV, index=130)
    out = cache_attention(q, k, v, jnp.where(valid, 0.0, _NEG), jnp.int32(index))
    _check(out, _reference(q, k, v, valid, index, jnp.float32), q, valid, index, 1e-5)


def test_slots_after_the_chunk_are_never_read():
    """NaN in every slot >= index + T does not reach the output: the loop stops there."""
    q, k, v, valid, index = _case(T=16, index=112)   # chunk ends at slot 128, a block edge
    bad = lambda a: a.at[:, 128:].set(jnp.nan)  # noqa: E731
    out = cache_attention(q, bad(k), bad(v), jnp.where(valid, 0.0, _NEG), jnp.int32(index),
                          block_k=64)
    _check(out, _reference(q, k, v, valid, index, jnp.float32), q, valid, index, 1e-5)


def test_bf16_close_to_reference():
    q, k, v, valid, index = _case(dtype=jnp.bfloat16, G=1, KV=4, T=32)
    out = cache_attention(q, k, v, jnp.where(valid, 0.0, _NEG), jnp.int32(index))
    _check(out, _reference(q, k, v, valid, index, jnp.bfloat16), q, valid, index, 3e-2)


def test_tiles_and_unsupported_shapes():
    assert _query_rows(1, 4) == 16 and _query_rows(256, 4) == 64 and _query_rows(24, 4) == 32
    assert _query_rows(48, 1) == 16 and _query_rows(3, 16) == 16
    assert not pallas_attention_ok(1, 100, 32, 4)          # slots not a multiple of block_k
    assert not pallas_attention_ok(1, 128, 24, 4)          # head_dim not a power of two
    assert not pallas_attention_ok(1, 128, 32, 5)          # G not a power of two
    assert not pallas_attention_ok(2, 128, 32, 4)          # 8 query rows: below one tile
    assert not pallas_attention_ok(24, 128, 32, 1)         # 24 rows: a 16-row tile + a partial one
    assert not pallas_attention_ok(12, 128, 32, 2) and not pallas_attention_ok(5, 128, 32, 4)
    assert pallas_attention_ok(24, 128, 32, 4) and pallas_attention_ok(48, 128, 32, 1)
    q, k, v, valid, index = _case(S=100, index=90)
    with pytest.raises(ValueError, match="unsupported shape"):
        cache_attention(q, k, v, jnp.zeros((3, 100)), jnp.int32(index))


def test_forward_with_cache_pallas_equals_xla():
    """A left-padded prefill chunk, then decode steps (one with a skipped row: a hole),
    then a 16-token continuation chunk through ``forward``: hidden states agree between
    cache_attn="pallas" and "xla" (fp32) on every valid position."""
    cfg = ModelConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_layers=2,
                      num_heads=4, num_kv_heads=2, head_dim=16, tie_word_embeddings=True)
    params = init_params(cfg, jax.random.key(1), jnp.float32)
    assert all(pallas_attention_ok(t, 64, 16, 2) for t in (8, 1, 16))  # no silent XLA fallback
    r = np.random.default_rng(2)
    cache0 = init_cache(cfg, 2, 64, jnp.float32)
    caches = {"xla": cache0, "pallas": cache0}
    chunks = [
        (r.integers(0, 256, (2, 8)), np.array([[False] * 3 + [True] * 5, [True] * 8])),
        (np.array([[11], [40]]), np.array([[True], [True]])),
        (np.array([[12], [41]]), np.array([[True], [False]])),    # row 1 skips a step
        (np.array([[13], [42]]), np.array([[True], [True]])),
        (r.integers(0, 256, (2, 16)), np.array([[False] * 6 + [True] * 10, [True] * 16])),
    ]
    step = jax.jit(lambda p, t, q, v, c, cache_attn: forward(p, cfg, t, q, v, c, cache_attn=cache_attn),
                   static_argnames=("cache_attn",))
    pos = np.zeros(2, np.int64)
    for tokens, valid in chunks:
        p = pos[:, None] + np.cumsum(valid, axis=1) - 1
        pos = pos + valid.sum(axis=1)
        hs = {}
        for impl in ("xla", "pallas"):
            hs[impl], caches[impl] = step(params, jnp.asarray(tokens, jnp.int32),
                                          jnp.asarray(np.maximum(p, 0), jnp.int32),
                                          jnp.asarray(valid), caches[impl], cache_attn=impl)
        np.testing.assert_allclose(np.asarray(hs["pallas"])[valid], np.asarray(hs["xla"])[valid],
                                   atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="cache_attn"):
        forward(params, cfg, jnp.asarray(tokens, jnp.int32), jnp.asarray(p, jnp.int32),
                jnp.asarray(valid), cache0, cache_attn="cuda")
