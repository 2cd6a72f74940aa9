"""Sampler.precompile: predicted programs built before the calls, which then build nothing and
sample exactly what they sample without it; the predicted shape set of a stage."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.engine import Buckets, Sampler, SamplingParams
from skillax.engine.precompile import (ProgramShape, StageCalls, build_key, precompile_enabled,
                                       predicted_shapes, prompt_chunks, stage_shapes)
from skillax.models.config import ModelConfig
from skillax.models.params import init_params

CFG = ModelConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=1, num_heads=4,
                  num_kv_heads=2, head_dim=8, rope_theta=1e4, rms_norm_eps=1e-5,
                  tie_word_embeddings=True, qk_norm=False, max_position_embeddings=512,
                  architecture="LlamaForCausalLM", eos_token_id=(2,))
# rows 4 / 8 with a shared prefill of 2 rows, chunks 8 / 16, 8 new tokens
BUCKETS = Buckets(batch=(4, 8), prompt=(8, 16), new_tokens=(8,), cache=(32,), prefill=(2, 4, 8))


def _sampler():
    return Sampler(CFG, None, max_len=32, dtype=jnp.float32, buckets=BUCKETS)


@pytest.fixture(scope="module")
def params():
    return jax.device_put(init_params(CFG, jax.random.key(0), jnp.float32), jax.devices()[0])


def _calls():
    """(prompts, sampling) of a shared call (2 prompts x n = 2: 4 rows, 2 prefill rows) and an
    unshared one (5 distinct prompts: 8 rows, chunk 16)."""
    rng = np.random.default_rng(0)
    shared = [rng.integers(3, 64, 6).tolist(), rng.integers(3, 64, 5).tolist()]
    unshared = [rng.integers(3, 64, int(n)).tolist() for n in (3, 12, 7, 9, 4)]
    sp = SamplingParams(temperature=1.0, max_new_tokens=6, eos_ids=[])
    return [(shared, SamplingParams(temperature=1.0, max_new_tokens=6, n=2, eos_ids=[])), (unshared, sp)]


def _shape(sampler, prompts, sp, params) -> ProgramShape:
    p = sampler.plan(prompts, sp, params=params)
    return ProgramShape(p["batch"], p["prefill_rows"], p["chunk"], p["new_bucket"], p["cache_len"], p["shared"])


def test_precompiled_calls_build_nothing_and_sample_the_same(params):
    plain, pre = _sampler(), _sampler()
    shapes = [_shape(pre, pr, sp, params) for pr, sp in _calls()]
    assert [s.shared for s in shapes] == [True, False] and shapes[0].prefill_rows == 2
    report = pre.precompile(params, shapes)
    assert report["programs"] == 2 and len(pre.precompiled) == 2 and pre.builds == []
    assert {build_key(r) for r in pre.precompiled} == {s.key() for s in shapes}
    assert pre.precompile(params, shapes)["programs"] == 0         # already built: nothing new
    for i, (prompts, sp) in enumerate(_calls()):
        a = plain.generate(params, prompts, sp, seed=3, step=i)
        b = pre.generate(params, prompts, sp, seed=3, step=i)
        np.testing.assert_array_equal(a.tokens, b.tokens)
        np.testing.assert_array_equal(a.logprobs, b.logprobs)
        np.testing.assert_array_equal(a.lengths, b.lengths)
    assert len(plain.builds) == 2 and pre.builds == []               # the real calls built nothing
    assert {build_key(r) for r in plain.builds} == {s.key() for s in shapes}


def test_stage_shapes_cover_every_call_of_the_stage(params):
    """Every (rows, distinct prompts, longest prompt) in a stage's ranges plans to a predicted
    shape, and each predicted shape is the plan of some such call."""
    s = _sampler()
    stage = StageCalls("play", rows=(1, 8), distinct=(1, 8), prompt_tokens=(5, 14), max_new_tokens=6)
    got = stage_shapes(s, stage, params)
    seen = set()
    sp = SamplingParams(max_new_tokens=6)
    for n in range(1, 9):
        for d in range(1, n + 1):
            for longest in (5, 8, 9, 14):
                prompts = [[3 + i] * longest for i in range(d)] + [[3] * longest] * (n - d)
                seen.add(_shape(s, prompts, sp, params))
    assert got == seen
    # rows 4: unshared (1 distinct of 1) or shared on 2 rows; rows 8: unshared, 2 or 4 prefill rows
    assert {(x.batch, x.prefill_rows) for x in got} == {(4, 4), (4, 2), (8, 8), (8, 2), (8, 4)}
    assert {x.chunk for x in got} == {8, 16}
    assert predicted_shapes(s, [stage, stage], params) == sorted(got)


def test_prompt_chunks_clip_at_max_len():
    s = _sampler()
    # past the largest prompt bucket (16) a prompt is its own chunk; max_len 32 - 6 new tokens
    # = 26 prompt tokens at most, and 24 + the 8-token buffer = 32 fits (no clip)
    assert prompt_chunks(s, 5, 20, 6) == [(8, 8), (16, 8)] + [(L, 8) for L in range(17, 21)]
    assert prompt_chunks(s, 25, 26, 6) == [(25, 7), (26, 6)]   # the buffer clipped to max_len
    assert prompt_chunks(s, 30, 40, 6) == []           # longer than the budget: refused, no program


def test_stage_calls_and_switch_validate():
    with pytest.raises(ValueError, match="rows"):
        StageCalls("x", rows=(3, 2), distinct=(1, 1), prompt_tokens=(1, 1), max_new_tokens=1)
    assert precompile_enabled("auto", "gpu") and not precompile_enabled("auto", "cpu")
    assert precompile_enabled("True", "cpu") and not precompile_enabled(False, "gpu")
    with pytest.raises(ValueError, match="model.precompile"):
        precompile_enabled("sometimes", "gpu")
