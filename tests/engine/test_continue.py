"""Multi-turn continuation equals re-encoding the whole history from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from skillax.engine import SamplingParams, stops

from tests.engine.test_sampler import PROMPTS

OBS = [[31, 32, 33], [40], [50, 51, 52, 53, 54, 55, 56], [60, 61]]


def _history(prompt, out, i):
    return list(prompt) + out.tokens[i, :out.lengths[i]].tolist()


def _assert_same(a, b, rows_a, rows_b):
    for i, j in zip(rows_a, rows_b):
        assert a.lengths[i] == b.lengths[j] and a.stop_reason[i] == b.stop_reason[j]
        np.testing.assert_array_equal(a.tokens[i], b.tokens[j])
        np.testing.assert_allclose(a.logprobs[i], b.logprobs[j], atol=1e-5, rtol=0)


def test_continue_equals_reencoding(qwen3, sampler):
    """Two observation turns after a first completion; rows end by EOS or by length."""
    _, params, _ = qwen3
    greedy = SamplingParams(temperature=0, max_new_tokens=6, eos_ids=[])
    first = sampler.generate(params, PROMPTS, greedy)
    eos = int(first.tokens[1, 2])  # makes row 1 (at least) stop by EOS in turn 1
    sp = SamplingParams(temperature=0, max_new_tokens=6, eos_ids=[eos])
    out1, state = sampler.generate(params, PROMPTS, sp, return_state=True)
    assert out1.stop_reason[1] == "eos"
    hist = [_history(p, out1, i) for i, p in enumerate(PROMPTS)]
    out2, state = sampler.continue_(state, OBS, params)
    ref2 = sampler.generate(params, [h + o for h, o in zip(hist, OBS)], sp)
    _assert_same(out2, ref2, range(4), range(4))
    hist = [h + o + out2.tokens[i, :out2.lengths[i]].tolist() for i, (h, o) in enumerate(zip(hist, OBS))]
    obs3 = [[70, 71], [72], [73, 74, 75], [76]]
    out3, state = sampler.continue_(state, obs3, params)
    ref3 = sampler.generate(params, [h + o for h, o in zip(hist, obs3)], sp)
    _assert_same(out3, ref3, range(4), range(4))


def test_continue_sampled_rows_skip_and_grow(qwen3, sampler):
    """Sampled first turn (temperature 0.7); a skipped row keeps its history untouched; a long
    chunk grows the cache to the next bucket; a donated state cannot be reused; after all
    that, the skipped row's next turn still equals re-encoding its history."""
    _, params, _ = qwen3
    sp = SamplingParams(temperature=0.7, max_new_tokens=10, eos_ids=[])
    out1, state = sampler.generate(params, PROMPTS[:2], sp, seed=5, return_state=True)
    S0 = state.cache.max_len
    hist = [_history(p, out1, i) for i, p in enumerate(PROMPTS[:2])]
    out2, state2 = sampler.continue_(state, [None, [9] * 30], params)
    assert out2.stop_reason[0] == "skipped" and out2.lengths[0] == 0 and out2.mask[0].sum() == 0
    assert state2.cache.max_len > S0  # grew
    with pytest.raises(ValueError, match="consumed"):
        sampler.continue_(state, [[1], [1]], params)
    out3, _ = sampler.continue_(state2, [[44, 45], None], params, SamplingParams(
        temperature=0, max_new_tokens=5, eos_ids=[]))
    ref = sampler.generate(params, [hist[0] + [44, 45]], SamplingParams(temperature=0, max_new_tokens=5, eos_ids=[]))
    _assert_same(out3, ref, [0], [0])
    assert out3.stop_reason[1] == "skipped"


def test_host_stop_cut_then_continue(qwen3, sampler, tokenizer):
    """With a 1-byte token table the device misses multi-byte stop strings inside a token;
    the host post-check cuts the completion, and the cache slots after the cut are
    invalidated so the next turn still equals re-encoding."""
    _, params, cfg = qwen3
    greedy = SamplingParams(temperature=0, max_new_tokens=12, eos_ids=[])
    ref = sampler.generate(params, PROMPTS, greedy)
    ids = ref.tokens[0].tolist()
    k = next((k for k in range(2, 9) if len(tokenizer.decode(ids[k:k + 1]).strip()) >= 2), None)
    if k is None:
        pytest.skip("no multi-byte greedy token to cut at")
    piece = tokenizer.decode(ids[k:k + 1]).strip()[:2]
    saved = sampler._byte_table
    tb, tl = stops.token_byte_table(tokenizer, cfg.vocab_size, width=1)
    sampler._byte_table = (tb, tl)
    try:
        sp = SamplingParams(temperature=0, max_new_tokens=12, eos_ids=[], stop_strings=[piece])
        out1, state = sampler.generate(params, PROMPTS, sp, return_state=True)
    finally:
        sampler._byte_table = saved
    n = out1.lengths[0]
    first = next(j for j in range(1, 13) if piece in tokenizer.decode(ids[:j]))
    assert out1.stop_reason[0] == "stop" and n == first
    if first == k + 1:  # the piece lies inside token k: only the host check can see it
        assert state.cut_from[0] < state.cache.max_len and not state.has_pending[0]
    hist = [_history(p, out1, i) for i, p in enumerate(PROMPTS)]
    out2, _ = sampler.continue_(state, OBS, params, greedy)
    ref2 = sampler.generate(params, [h + o for h, o in zip(hist, OBS)], greedy)
    _assert_same(out2, ref2, range(4), range(4))


def test_pallas_cache_attention_samples_like_xla(qwen3, tokenizer, engine_buckets, sampler):
    """The Pallas decode-attention kernel (interpret mode here) samples the same tokens with
    the same logprobs as the masked XLA attention, over a fresh call and a continuation
    (left-padded observation chunks and an EOS-stopped row leave holes in the slots)."""
    import jax.numpy as jnp

    from skillax.engine import Sampler

    _, params, cfg = qwen3
    pallas = Sampler(cfg, tokenizer, max_len=256, dtype=jnp.float32, buckets=engine_buckets,
                     cache_attention="pallas")
    assert sampler._cache_attn(params) == "xla"   # "auto" on CPU
    first = sampler.generate(params, PROMPTS, SamplingParams(temperature=0, max_new_tokens=6, eos_ids=[]))
    sp = SamplingParams(temperature=0.7, max_new_tokens=6, eos_ids=[int(first.tokens[1, 2])])
    outs = {}
    for name, s in (("xla", sampler), ("pallas", pallas)):
        out1, state = s.generate(params, PROMPTS, sp, seed=4, return_state=True)
        out2, _ = s.continue_(state, OBS, params, sp)
        outs[name] = (out1, out2)
    for a, b in zip(outs["pallas"], outs["xla"]):
        _assert_same(a, b, range(4), range(4))
    with pytest.raises(ValueError, match="cache_attention"):
        Sampler(cfg, max_len=256, cache_attention="triton")
