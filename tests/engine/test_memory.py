"""Sampler device memory (issue 17 item 3): the prefill fed in pieces equals the one-piece
prefill, the compiled program's working set stays under a hand-computed bound at a campaign
shape (XLA ``memory_analysis`` on CPU; nothing runs), the 1.5x batch / cache buckets, and the
``memory_budget`` guard (a call split into row chunks samples what the single call samples)."""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.engine import Buckets, Sampler, SamplingParams
from skillax.models.config import ModelConfig
from skillax.models.kv_cache import cache_bytes
from skillax.models.params import init_params

GIB = 2 ** 30
PROMPTS = [[5, 17, 42, 99, 3, 8, 9, 10, 11, 12, 13, 7, 7, 6, 5, 4, 3, 2, 100, 200],
           [7, 8, 9, 10, 11, 12, 13, 14, 15, 16], list(range(30, 54)), list(range(300, 318))]


def _same(a, b):
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.lengths, b.lengths)
    assert a.stop_reason == b.stop_reason
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5, rtol=0)


@contextlib.contextmanager
def _set(sampler, **kw):
    """The shared sampler (its compiled programs reused) with other knobs for one test."""
    old = {k: getattr(sampler, k) for k in kw}
    for k, v in kw.items():
        setattr(sampler, k, v)
    try:
        yield sampler
    finally:
        for k, v in old.items():
            setattr(sampler, k, v)


def test_prefill_pieces_equal_one_piece(qwen3, sampler):
    """4 rows x T = 32 fed in pieces of 8 tokens (prefill_tokens = 32: the largest divisor of
    32 with 4 x c <= 32) samples the same tokens and logprobs as one piece: a fresh call, its
    continuation (T = 16 in pieces of 8) and a shared (n = 2) prefill."""
    _, params, _ = qwen3
    assert sampler.prefill_tokens == 8192 and sampler._prefill_chunk(4, 32, 64, "xla") == 0
    sp = SamplingParams(temperature=1.0, max_new_tokens=10, eos_ids=[])
    sp2 = SamplingParams(temperature=1.0, max_new_tokens=10, eos_ids=[], n=2)
    obs = [list(range(60, 60 + n)) for n in (12, 15, 9, 14)]   # + the pending token -> T = 16
    a, sa = sampler.generate(params, PROMPTS, sp, seed=3, step=1, return_state=True)
    a2, _ = sampler.continue_(sa, obs, params)
    a3 = sampler.generate(params, PROMPTS, sp2, seed=5, step=2)
    with _set(sampler, prefill_tokens=32) as parts:
        assert parts._prefill_chunk(4, 32, 64, "xla") == 8
        b, sb = parts.generate(params, PROMPTS, sp, seed=3, step=1, return_state=True)
        b2, _ = parts.continue_(sb, obs, params)
        b3 = parts.generate(params, PROMPTS, sp2, seed=5, step=2)
    assert b.stats["prefill_chunk"] == 8 and a.stats["prefill_chunk"] == 32
    _same(a, b)
    assert b2.stats["prefill_chunk"] == 8 and a2.stats["prefill_chunk"] == 16
    _same(a2, b2)
    assert b3.stats["prefill_rows"] == 4 and b3.stats["batch"] == 8   # one prefill per prompt
    _same(a3, b3)


def test_score_budget_picks_the_piece():
    """The piece is the largest divisor of T whose rows x H x c x S x 4 score bytes fit."""
    cfg = ModelConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=1, num_heads=9,
                      num_kv_heads=3, head_dim=16, rope_theta=1e4, rms_norm_eps=1e-5,
                      tie_word_embeddings=True, qk_norm=False, max_position_embeddings=8192,
                      architecture="LlamaForCausalLM", eos_token_id=(2,))
    s = Sampler(cfg, max_len=8192, dtype=jnp.float32, prefill_tokens=1 << 20, prefill_score_bytes=256 << 20)
    # 192 rows x 9 heads x 1024 slots x 4 B = 7.08 MB per token: c <= 37 -> 32 divides 768
    assert s._prefill_chunk(192, 768, 1024, "xla") == 32
    # 4 rows x 9 x 8192 x 4 = 1.18 MB per token: c <= 227; 7808 = 2^7 x 61 -> 128
    assert s._prefill_chunk(4, 7808, 8192, "xla") == 128
    assert s._prefill_chunk(4, 64, 128, "xla") == 0             # fits in one piece
    assert s._prefill_chunk(2048, 768, 1024, "xla") == 3        # 2048 x 9 x 3 x 1024 x 4 = 226 MB
    assert s._prefill_chunk(16384, 768, 1024, "xla") == 1       # nothing fits: token by token


def test_batch_and_cache_buckets_have_1_5x_points():
    b = Buckets()
    assert b.batch[:12] == (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
    assert b.pick("batch", 140) == 192 and b.pick("batch", 108) == 128 and b.pick("batch", 36) == 48
    assert b.cache[:6] == (64, 96, 128, 192, 256, 384) and all(x % 32 == 0 for x in b.cache)
    assert b.pick("cache", 2112) == 3072 and b.cache_len(896, 4096) == 1024


def test_batch_buckets_spec():
    """``model.batch_buckets``: hand-listed sizes for each word, the backend rule, bad specs."""
    from skillax.engine.buckets import batch_buckets

    coarse = (8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
    assert batch_buckets("auto", "gpu") == batch_buckets("auto", "tpu") == batch_buckets(" Coarse ", "cpu") == coarse
    assert batch_buckets("auto", "cpu") == batch_buckets("fine", "gpu") == Buckets().batch
    assert batch_buckets("32, 8,8", "gpu") == (8, 32)
    assert Buckets(batch=coarse).pick("batch", 140) == 192 and Buckets(batch=coarse).pick("batch", 3) == 8
    for bad in ("pow2", "8,x", "", "0,8"):
        with pytest.raises(ValueError, match="batch_buckets"):
            batch_buckets(bad, "gpu")
    # model.batch_floor: coarse sizes from the floor up (the floor itself the smallest); a fine
    # or explicit list ignores it; out of range is refused
    assert batch_buckets("auto", "gpu", 32) == (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
    assert batch_buckets("coarse", "gpu", 40) == (40, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
    assert batch_buckets("auto", "gpu", 0) == coarse and batch_buckets("auto", "gpu", 1024) == (1024,)
    assert batch_buckets("auto", "cpu", 32) == Buckets().batch and batch_buckets("8,32", "gpu", 32) == (8, 32)
    for bad in (-1, 1025):
        with pytest.raises(ValueError, match="batch_floor"):
            batch_buckets("auto", "gpu", bad)
    # a floor at or below the smallest coarse size adds no smaller size (a 1 x 2 step's floor 2
    # gave (2, 8, 16, ...): more programs, not fewer); 12 replaces 8
    assert batch_buckets("auto", "gpu", 2) == batch_buckets("auto", "gpu", 8) == coarse
    assert batch_buckets("auto", "gpu", 12)[:3] == (12, 16, 32)
    # model.prefill_floor: the shared prefill's rows are {prefill_floor} + the floored batch sizes
    # (coarse, both floors set); otherwise the batch sizes without a floor
    from skillax.engine.buckets import prefill_buckets

    assert prefill_buckets("auto", "gpu", 32, 8) == (8, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
    assert prefill_buckets("auto", "gpu", 0, 8) == prefill_buckets("coarse", "cpu", 32, 0) == coarse
    assert prefill_buckets("auto", "cpu", 32, 8) == Buckets().batch and prefill_buckets("8,32", "gpu", 32, 8) == (8, 32)
    with pytest.raises(ValueError, match="prefill_floor"):
        prefill_buckets("auto", "gpu", 32, 2000)
    with pytest.raises(ValueError, match="prefill_floor"):
        prefill_buckets("auto", "gpu", 32, -1)
    assert prefill_buckets("auto", "gpu", 4, 2) == coarse      # the batch floor changes nothing
    assert Buckets(batch=(4, 8)).prefill == (4, 8) == Buckets(batch=(4, 8)).split
    for name in ("prefill", "split"):       # a ladder that cannot hold the largest call
        with pytest.raises(ValueError, match=f"buckets.{name} ends at 4 rows"):
            Buckets(batch=(8, 16), **{name: (2, 4)})
    # model_buckets: the parts of a budget-split call use the sizes without the floor
    from skillax.engine.buckets import model_buckets

    b = model_buckets({"batch_floor": 32, "prefill_floor": 8}, "gpu")
    assert b.batch[0] == 32 and b.prefill[:2] == (8, 32) and b.split == coarse
    assert b.for_parts().batch == b.for_parts().prefill == coarse


def test_skill1_batch_floor_follows_the_step_size():
    """Skill1's model.batch_floor is tasks_per_step x group_size (prefill_floor tasks_per_step),
    also after a config changes
    either (an ml_collections reference; the command-line override: test_config_discovery); an
    explicit value replaces it."""
    from skillax import config_defaults

    c = config_defaults.skill1("alfworld")
    assert c.model.batch_floor == 16 * 8 and config_defaults.model().batch_floor == 0
    assert c.model.prefill_floor == 16 and config_defaults.model().prefill_floor == 0
    c.tasks_per_step, c.group_size = 8, 4
    assert c.model.batch_floor == 32 and c.copy_and_resolve_references().model.batch_floor == 32
    assert c.model.prefill_floor == 8
    assert '"batch_floor": 32' in c.to_json()
    c.model.batch_floor = 0
    c.tasks_per_step = 2
    assert c.model.batch_floor == 0 and c.tasks_per_step == 2


def test_prompt_buckets_spec():
    """``model.prompt_buckets``: hand-listed sizes for each word and bad specs."""
    from skillax.engine.buckets import prompt_buckets

    assert prompt_buckets("fine") == Buckets().prompt
    assert prompt_buckets(" Coarse ")[:6] == (16, 32, 64, 128, 256, 512)
    assert prompt_buckets("coarse")[-1] == 1 << 17 and len(prompt_buckets("coarse")) == 14
    assert prompt_buckets("1024, 512,512") == (512, 1024)
    b = Buckets(prompt=prompt_buckets("coarse"))
    # campaign 15's chunk sizes 384 / 768 / 1536 pad to the next power of two
    assert [b.pick("prompt", n) for n in (300, 384, 600, 768, 1100, 1536)] == [512, 512, 1024, 1024, 2048, 2048]
    for bad in ("auto", "8,x", "", "0,8"):
        with pytest.raises(ValueError, match="prompt_buckets"):
            prompt_buckets(bad)


def test_padded_prompts_sample_like_fine_buckets(qwen3, sampler):
    """Coarse prompt buckets (prompts of 10-24 tokens left-padded to a 64-token chunk, not 24)
    sample the same tokens and logprobs: padded positions are masked."""
    _, params, _ = qwen3
    sp = SamplingParams(max_new_tokens=12, temperature=1.0, n=1)
    fine = sampler.generate(params, PROMPTS, sp, seed=4, step=1)
    with _set(sampler, buckets=Buckets(batch=sampler.buckets.batch, prompt=(64, 1 << 17),
                                       new_tokens=sampler.buckets.new_tokens, cache=sampler.buckets.cache)) as c:
        coarse = c.generate(params, PROMPTS, sp, seed=4, step=1)
    assert fine.stats["chunk"] < coarse.stats["chunk"] == 64
    _same(fine, coarse)


def test_padded_rows_sample_like_fine_buckets(qwen3, sampler):
    """Coarse row buckets (3 and 5 rows padded to 8) sample the same tokens and logprobs as rows
    padded to 4 and 8: padding rows never sample and rows keep their keys."""
    _, params, _ = qwen3
    sp = SamplingParams(max_new_tokens=12, temperature=1.0, n=1)
    for rows in (PROMPTS[:3], PROMPTS + PROMPTS[:1]):
        fine = sampler.generate(params, rows, sp, seed=4, step=1)
        with _set(sampler, buckets=Buckets(batch=(8,), prompt=sampler.buckets.prompt,
                                           new_tokens=sampler.buckets.new_tokens, cache=sampler.buckets.cache)) as c:
            coarse = c.generate(params, rows, sp, seed=4, step=1)
        assert coarse.tokens.shape == fine.tokens.shape == (len(rows), 12)
        _same(fine, coarse)


# SmolLM2-135M widths (9 heads, 3 KV heads of 64, vocab 49152), 4 layers: the working set of
# a prefill does not depend on depth, the compile time does
SMOL4 = ModelConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_layers=4, num_heads=9,
                    num_kv_heads=3, head_dim=64, rope_theta=100000.0, rms_norm_eps=1e-5,
                    tie_word_embeddings=True, qk_norm=False, max_position_embeddings=8192,
                    architecture="LlamaForCausalLM", eos_token_id=(2,))


def _campaign_call(**kw):
    """The Skill1 eval chunk that died on the H200: 140 play prompts of 520-700 tokens, 128
    new tokens, bf16, max_len 4096 (chunk T = 768, 1,024 slots)."""
    params = jax.eval_shape(lambda: jax.tree.map(lambda x: x.astype(jnp.bfloat16),
                                                 init_params(SMOL4, jax.random.key(0))))
    rng = np.random.default_rng(0)
    prompts = [rng.integers(3, 49152, size=(520, 610, 700)[i % 3]).tolist() for i in range(140)]
    sp = SamplingParams(temperature=1.0, max_new_tokens=128)
    s = Sampler(SMOL4, None, max_len=4096, dtype=jnp.bfloat16, cache_attention="xla", **kw)
    mem = s.lower(params, prompts, sp).compile().memory_analysis()
    return s, params, prompts, sp, mem


def test_compiled_working_set_is_bounded():
    """Temp bytes of the compiled program at the Skill1 eval shape: 192 rows (140 -> the 1.5x
    bucket, not 256), pieces of 32 tokens, temp under a hand-computed bound of
      3 x 256 MiB (one piece's fp32 scores, probabilities and their cast: <= prefill_score_bytes
      each) + 6,144 tokens x 2 x 4 x (3 D + 2 (H + 2 KV) Dh + 3 F) = 6,144 x 66,048 B (406 MB)
      + the decode step (6 x 192 x 49152 x 4 B logits / sort = 226 MB) + the 4 layers' weights
      (bf16, 28 MB) = 1.37 GiB,
    where the one-piece program needs > 4 GiB (the (192, 9, 768, 1024) fp32 scores alone are
    5.4 GB). ``call_bytes`` predicts the call (cache + temp) from above, within 2x."""
    s, params, prompts, sp, mem = _campaign_call()
    shape = s.last_lower_shape
    assert (shape["batch"], shape["chunk"], shape["cache_len"], shape["prefill_chunk"]) == (192, 768, 1024, 32)
    bound = 3 * (256 << 20) + 6144 * 2 * 4 * (3 * 576 + 2 * 15 * 64 + 3 * 1536) \
        + 6 * 192 * 49152 * 4 + 4 * (576 * 960 + 576 * 576 + 3 * 576 * 1536) * 2
    assert bound < 1.4 * GIB
    assert mem.temp_size_in_bytes < bound, mem.temp_size_in_bytes / GIB
    kv = cache_bytes(SMOL4, 192, 1024, jnp.bfloat16)
    pred = s.call_bytes(prompts, sp, params=params)
    measured = mem.temp_size_in_bytes + kv
    assert measured <= pred["total"] <= 2 * measured, (measured / GIB, pred)
    _, _, _, _, old = _campaign_call(prefill_tokens=0)
    assert old.temp_size_in_bytes > 4 * GIB


def test_budget_split_samples_like_one_call(qwen3, sampler):
    """With memory_budget below the whole call's prediction, generate runs consecutive prompt
    chunks that each fit, and returns the single call's tokens / logprobs (default keys,
    row_keys, and n = 2 groups); a budget no single prompt fits raises before running."""
    _, params, _ = qwen3
    prompts = PROMPTS + [p[::-1] for p in PROMPTS]                    # 8 prompts
    sp = SamplingParams(temperature=1.0, max_new_tokens=10, eos_ids=[])
    sp2 = SamplingParams(temperature=1.0, max_new_tokens=10, eos_ids=[], n=2)
    full = sampler.call_bytes(prompts, sp, params=params)["total"]
    half = sampler.call_bytes(prompts[:4], sp, params=params)["total"]
    assert half < full and sampler.memory_budget == 0
    keyed = {"row_keys": [(9, 100 + r) for r in range(8)]}
    one = [sampler.generate(params, prompts, sp, seed=1, step=4, **kw) for kw in ({}, keyed)]
    one2 = sampler.generate(params, prompts[:4], sp2, seed=2, step=0)
    with _set(sampler, memory_budget=half) as split:
        assert split._budget_split(prompts, sp, 0, params) == [(0, 4), (4, 8)]
        two = [split.generate(params, prompts, sp, seed=1, step=4, **kw) for kw in ({}, keyed)]
    for a, b in zip(one, two):
        assert b.stats["splits"] == 2 and b.stats["batch"] == 8 and "splits" not in a.stats
        _same(a, b)
        assert b.texts == a.texts and b.group.tolist() == a.group.tolist()
    with _set(sampler, memory_budget=sampler.call_bytes(prompts[:2], sp2, params=params)["total"]) as split:
        b = split.generate(params, prompts[:4], sp2, seed=2, step=0)
    assert b.stats["splits"] == 2 and b.group.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    _same(one2, b)
    with _set(sampler, memory_budget=1024), pytest.raises(ValueError, match="sampler_memory_gb"):
        sampler.generate(params, prompts, sp)
    # a row floor (8 rows: every call pads to 8) still splits: the parts use buckets.split (the
    # sizes without the floor), so a 4-prompt part takes 4 rows; without it a part padded back to
    # 8 rows needs the whole call's memory and nothing fits
    floored = Buckets(batch=(8, 16), split=Buckets().batch)
    with _set(sampler, memory_budget=half, buckets=floored) as split:
        assert split._budget_split(prompts, sp, 0, params) == [(0, 4), (4, 8)]
        b = split.generate(params, prompts, sp, seed=1, step=4)
        assert split.buckets is floored
    assert b.stats["splits"] == 2 and b.stats["batch"] == 8
    _same(one[0], b)
    with _set(sampler, memory_budget=half, buckets=Buckets(batch=(8, 16))), \
            pytest.raises(ValueError, match="sampler_memory_gb"):
        sampler.generate(params, prompts, sp)


def test_engine_reads_sampler_memory_gb(tmp_path):
    from skillax import config_defaults

    assert config_defaults.model().sampler_memory_gb == 0.0
    from skillax.methods.common.engine import PolicyEngine
    from tests.methods.test_engine_mesh import config
    from tests.methods.test_skillos_integration import _tiny_model_dir

    c = config(_tiny_model_dir(str(tmp_path / "m")))
    c.model.sampler_memory_gb = 1.5
    assert config_defaults.model().sampler_xla == ""
    c.model.sampler_xla = "xla_gpu_autotune_level=1"
    assert config_defaults.model().batch_buckets == "auto"
    c.model.batch_buckets = "coarse"
    c.model.batch_floor = 24
    c.model.prefill_floor = 12
    assert config_defaults.model().prompt_buckets == "fine"
    c.model.prompt_buckets = "512,1024"
    eng = PolicyEngine.create(c, tmp_path / "run")
    try:
        assert eng.sampler.buckets.batch[:3] == (24, 32, 64) and eng.sampler.buckets.batch[-1] == 1024
        assert eng.sampler.buckets.prefill[:4] == (12, 24, 32, 64)
        assert eng.sampler.buckets.prompt == (512, 1024)
        assert eng.sampler.memory_budget == int(1.5 * GIB)
        assert eng.sampler.compiler_options == {"xla_gpu_autotune_level": 1}
    finally:
        eng.close()
