"""Sampler against transformers: greedy parity, teacher-forced logprobs, groups, stops."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from skillax.engine import SamplingParams
from skillax.engine.sampling import sampling_logprobs
from skillax.models.transformer import forward, logits as model_logits

from tests.engine.conftest import load_ours, make_hf_model

PROMPTS = [[5, 17, 42, 99, 3], [7, 8], [100, 200, 300, 400, 500, 11, 12, 13, 14], [250]]


def hf_greedy(model, prompts, max_new):
    """transformers' greedy ``generate`` on a left-padded batch (no EOS: runs to max_new)."""
    T = max(len(p) for p in prompts)
    ids = torch.zeros((len(prompts), T), dtype=torch.long)
    att = torch.zeros((len(prompts), T), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, T - len(p):] = torch.tensor(p)
        att[i, T - len(p):] = 1
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=att, max_new_tokens=max_new,
                             do_sample=False, eos_token_id=None, pad_token_id=0,
                             min_new_tokens=max_new)
    return out[:, T:].numpy()


def test_greedy_matches_transformers_qwen3(qwen3, sampler):
    model, params, _ = qwen3
    out = sampler.generate(params, PROMPTS, SamplingParams(temperature=0, max_new_tokens=12, eos_ids=[]))
    ref = hf_greedy(model, PROMPTS, 12)
    np.testing.assert_array_equal(out.tokens, ref)
    assert out.stop_reason == ["length"] * 4 and out.lengths.tolist() == [12] * 4
    assert out.mask.sum() == 48


def test_greedy_matches_transformers_llama(tmp_path, engine_buckets):
    from skillax.engine import Sampler

    model = make_hf_model("llama", seed=1)
    params, cfg = load_ours(model, tmp_path)
    assert cfg.tie_word_embeddings and not cfg.qk_norm
    s = Sampler(cfg, max_len=256, dtype=jnp.float32, buckets=engine_buckets)
    out = s.generate(params, PROMPTS, SamplingParams(temperature=0, max_new_tokens=12, eos_ids=[]))
    np.testing.assert_array_equal(out.tokens, hf_greedy(model, PROMPTS, 12))


def test_fused_decode_weights_give_the_same_samples(qwen3, sampler, engine_buckets):
    """q|k|v and gate|up concatenated for the decode step (the default) sample the same tokens
    with the same logprobs as the five separate matrices."""
    from skillax.engine import Sampler

    _, params, cfg = qwen3
    assert sampler.fuse_weights
    plain = Sampler(cfg, max_len=256, dtype=jnp.float32, buckets=engine_buckets, fuse_weights=False)
    sp = SamplingParams(temperature=1.0, max_new_tokens=12, eos_ids=[], n=2)
    a = sampler.generate(params, PROMPTS[:2], sp, seed=5)
    b = plain.generate(params, PROMPTS[:2], sp, seed=5)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)


@functools.partial(jax.jit, static_argnames=("cfg",))
def _teacher_forced_batch(params, seq, valid, temperature, top_k, top_p, *, cfg):
    """Right-padded (B, L) sequences -> (B, L-1) logprob of token t+1 from the logits at t."""
    pos = jnp.broadcast_to(jnp.arange(seq.shape[1]), seq.shape)
    hidden, _ = forward(params, cfg, seq, pos, valid)
    lg = model_logits(params, cfg, hidden)[:, :-1]  # (B, L-1, V)
    lg = lg.reshape(-1, lg.shape[-1])
    greedy = temperature == 0
    lp = jnp.where(greedy, jax.nn.log_softmax(lg, axis=-1),
                   sampling_logprobs(lg, jnp.where(greedy, 1.0, temperature), top_k, top_p))
    tok = seq[:, 1:].reshape(-1, 1)
    return jnp.take_along_axis(lp, tok, axis=-1).reshape(seq.shape[0], -1)


def teacher_forced(params, cfg, prompts, out, temperature, top_k=0, top_p=1.0, width=32):
    """Per row, the teacher-forced logprobs of its completion (trainer alignment, PITFALLS 4)."""
    seq = np.zeros((len(prompts), width), np.int32)
    valid = np.zeros((len(prompts), width), bool)
    for i, p in enumerate(prompts):
        row = list(p) + out.tokens[i, :out.lengths[i]].tolist()
        seq[i, :len(row)], valid[i, :len(row)] = row, True
    lp = np.asarray(_teacher_forced_batch(params, seq, valid, np.float32(temperature), np.int32(top_k),
                                          np.float32(top_p), cfg=cfg))
    return [lp[i, len(p) - 1:len(p) - 1 + out.lengths[i]] for i, p in enumerate(prompts)]


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, 0, 1.0), (0.6, 0, 1.0), (0.8, 20, 0.9),
                                                     (0.0, 0, 1.0)])
def test_logprobs_reproduced_by_teacher_forcing(qwen3, sampler, temperature, top_k, top_p):
    _, params, cfg = qwen3
    sp = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, max_new_tokens=12,
                        eos_ids=[])
    out = sampler.generate(params, PROMPTS, sp, seed=3, step=1)
    ref = teacher_forced(params, cfg, PROMPTS, out, temperature, top_k, top_p)
    for i in range(len(PROMPTS)):
        np.testing.assert_allclose(out.logprobs[i, :out.lengths[i]], ref[i], atol=1e-5, rtol=0)
    assert np.all(out.logprobs[out.mask == 1] <= 0)


def test_group_samples_differ_and_seed_reproduces(qwen3, sampler):
    _, params, _ = qwen3
    sp = SamplingParams(temperature=1.0, max_new_tokens=16, n=8, eos_ids=[])
    a = sampler.generate(params, [PROMPTS[0]], sp, seed=7, step=2)
    assert a.tokens.shape == (8, 16) and a.group.tolist() == [0] * 8
    assert len({tuple(r) for r in a.tokens.tolist()}) > 1
    b = sampler.generate(params, [PROMPTS[0]], sp, seed=7, step=2)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.logprobs, b.logprobs)
    c = sampler.generate(params, [PROMPTS[0]], sp, seed=7, step=3)
    assert not np.array_equal(a.tokens, c.tokens)


def _first_greedy(sampler, params, prompt, k):
    out = sampler.generate(params, [prompt], SamplingParams(temperature=0, max_new_tokens=k, eos_ids=[]))
    return out.tokens[0].tolist()


def test_eos_stops_once_even_when_pad_is_eos(qwen3, sampler):
    _, params, _ = qwen3
    ref = _first_greedy(sampler, params, PROMPTS[0], 12)
    eos = ref[4]
    j = ref.index(eos)  # first occurrence
    for pad in (eos, 0):
        sp = SamplingParams(temperature=0, max_new_tokens=12, eos_ids=[eos], pad_id=pad)
        out = sampler.generate(params, [PROMPTS[0]], sp)
        assert out.stop_reason == ["eos"] and out.lengths[0] == j + 1
        assert out.mask[0].tolist() == [1] * (j + 1) + [0] * (11 - j)
        assert out.tokens[0, j] == eos and np.all(out.tokens[0, j + 1:] == pad)
        assert np.all(out.logprobs[0, j + 1:] == 0) and np.all(out.logprobs[0, :j + 1] < 0)


def test_stop_token_ids_and_length(qwen3, sampler):
    _, params, _ = qwen3
    ref = _first_greedy(sampler, params, PROMPTS[1], 12)
    stop = ref[2]
    j = ref.index(stop)
    out = sampler.generate(params, [PROMPTS[1], PROMPTS[2]], SamplingParams(
        temperature=0, max_new_tokens=12, eos_ids=[], stop_token_ids=[stop]))
    assert out.stop_reason[0] == "stop" and out.lengths[0] == j + 1
    out = sampler.generate(params, [PROMPTS[1]], SamplingParams(temperature=0, max_new_tokens=5, eos_ids=[]))
    assert out.stop_reason == ["length"] and out.lengths.tolist() == [5] and out.tokens.shape == (1, 5)
    np.testing.assert_array_equal(out.tokens[0], ref[:5])


def test_stop_strings(qwen3, sampler, tokenizer):
    """A stop string made of the text of greedy tokens 3..4 ends the completion at token 4,
    however it is tokenised; the decoded kept text contains it, the text before does not."""
    _, params, _ = qwen3
    ref = _first_greedy(sampler, params, PROMPTS[2], 16)
    text = tokenizer.decode(ref, skip_special_tokens=False)
    piece = tokenizer.decode(ref[3:5], skip_special_tokens=False)
    if not piece.strip():
        pytest.skip("greedy tokens 3..4 decode to whitespace")
    sp = SamplingParams(temperature=0, max_new_tokens=16, eos_ids=[], stop_strings=[piece, "\x00zz"])
    out = sampler.generate(params, [PROMPTS[2]], sp)
    n = out.lengths[0]
    kept = tokenizer.decode(out.tokens[0, :n].tolist(), skip_special_tokens=False)
    assert out.stop_reason == ["stop"] and piece in kept
    assert piece not in tokenizer.decode(out.tokens[0, :n - 1].tolist(), skip_special_tokens=False)
    assert n == text_first_cut(tokenizer, ref, piece) and out.mask[0].sum() == n


def text_first_cut(tokenizer, ids, s):
    for k in range(1, len(ids) + 1):
        if s in tokenizer.decode(ids[:k], skip_special_tokens=False):
            return k
    return None


@pytest.mark.parametrize("bad,match", [
    (dict(prompts=[[]]), "empty"),
    (dict(prompts=[]), "empty"),
    (dict(prompts=[list(range(1, 250))]), "max_len"),
    (dict(prompts=[[1, 2, 10_000]]), "outside"),
    (dict(sp=dict(max_new_tokens=0)), "max_new_tokens"),
    (dict(sp=dict(max_new_tokens=-3)), "max_new_tokens"),
    (dict(sp=dict(top_p=0.0)), "top_p"),
    (dict(sp=dict(top_p=1.5)), "top_p"),
    (dict(sp=dict(temperature=-0.1)), "temperature"),
    (dict(sp=dict(top_k=-1)), "top_k"),
    (dict(sp=dict(stop_strings="</a>")), "list"),
])
def test_bad_input_raises_before_compiling(qwen3, sampler, bad, match):
    _, params, _ = qwen3
    before = sampler.compile_count
    with pytest.raises(ValueError, match=match):
        sp = SamplingParams(**{"max_new_tokens": 8, **bad.get("sp", {})})
        sampler.generate(params, bad.get("prompts", [[1, 2, 3]]), sp)
    assert sampler.compile_count == before


def test_stop_strings_need_tokenizer(qwen3, engine_buckets):
    from skillax.engine import Sampler

    _, params, cfg = qwen3
    s = Sampler(cfg, None, max_len=64, dtype=jnp.float32, buckets=engine_buckets)
    with pytest.raises(ValueError, match="tokenizer"):
        s.generate(params, [[1, 2]], SamplingParams(max_new_tokens=4, stop_strings=["x"]))
    assert s.compile_count == 0


def test_no_recompilation_after_warmup(qwen3, sampler):
    """PITFALLS 15: 20 calls with varied prompt / output lengths and sampling knobs inside
    the warmed buckets and modes compile nothing new (jit cache misses and XLA backend
    compiles)."""
    _, params, _ = qwen3
    rng = np.random.default_rng(0)

    def call(i):
        n_prompts = int(rng.integers(1, 5))
        prompts = [rng.integers(3, 500, size=int(rng.integers(1, 33))).tolist() for _ in range(n_prompts)]
        sp = SamplingParams(temperature=float(rng.choice([0.0, 0.6, 1.0])), top_k=int(rng.choice([0, 5])),
                            top_p=float(rng.choice([1.0, 0.9])), max_new_tokens=int(rng.integers(1, 17)),
                            n=2 if n_prompts <= 2 else 1, eos_ids=[int(rng.integers(3, 500))])
        sampler.generate(params, prompts, sp, seed=i, step=i)

    # one call per (prompt bucket, sampling mode); batch is always the 4 bucket, new tokens 16.
    # The sampling mode (greedy / sample / truncate) is static in the program; knob values are not.
    modes = (dict(temperature=0.0), dict(temperature=1.0), dict(temperature=1.0, top_k=5))
    for t in (5, 30):
        for m in modes:
            sampler.generate(params, [[3] * t] * 3, SamplingParams(max_new_tokens=16, **m), seed=0)
    compiles = []
    listener = lambda event, secs, **kw: compiles.append(event) if "backend_compile" in event else None
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        before, n_builds = sampler.compile_count, len(sampler.builds)
        for i in range(20):
            call(i)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert sampler.compile_count == before
    assert compiles == []
    assert len(sampler.builds) == n_builds          # the build log agrees: nothing built


def test_build_log_names_each_new_program_once(qwen3, engine_buckets):
    """``Sampler.builds``: the first call of a shape key records one build with that key
    (batch / chunk / new-token / cache buckets) and its seconds; the same key again records
    nothing; a longer prompt (a new chunk and cache bucket) records one more."""
    from skillax.engine import Sampler

    _, params, cfg = qwen3
    s = Sampler(cfg, max_len=256, dtype=jnp.float32, buckets=engine_buckets)
    sp = SamplingParams(temperature=0, max_new_tokens=4, eos_ids=[])
    assert s.builds == []
    s.generate(params, [[5, 6, 7]] * 3, sp)
    assert len(s.builds) == 1
    b = s.builds[0]
    assert (b["batch"], b["chunk"], b["new_bucket"], b["cache_len"]) == (4, 16, 16, 64) and b["seconds"] > 0
    s.generate(params, [[9, 8]] * 2, sp, seed=3)                 # same buckets: no build
    assert len(s.builds) == 1
    s.generate(params, [list(range(3, 23))] * 3, sp)             # 20 tokens: chunk 32, cache 64
    assert len(s.builds) == 2 and (s.builds[1]["chunk"], s.builds[1]["cache_len"]) == (32, 64)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_row_keys_make_a_row_independent_of_its_batch(qwen3, sampler, temperature):
    """generate(row_keys=...): a row samples the same tokens (logprobs within 1e-5) alone,
    at another position, next to other rows and at another batch bucket; the default keys
    are (step, row index) exactly."""
    _, params, _ = qwen3
    sp = SamplingParams(temperature=temperature, max_new_tokens=12, eos_ids=[])
    keys = [(5, 10), (5, 11), (6, 10), (9, 3)]
    full = sampler.generate(params, PROMPTS, sp, seed=3, row_keys=keys)
    rev = sampler.generate(params, PROMPTS[::-1], sp, seed=3, row_keys=keys[::-1])
    alone = sampler.generate(params, [PROMPTS[1]], sp, seed=3, row_keys=[keys[1]])
    wide = sampler.generate(params, PROMPTS + PROMPTS[:2], sp, seed=3, row_keys=keys + [(1, 1), (2, 2)])
    assert wide.stats["batch"] == 8 and full.stats["batch"] == 4
    for i in range(4):
        for other, j in ((rev, 3 - i), (wide, i)):
            np.testing.assert_array_equal(full.tokens[i], other.tokens[j])
            np.testing.assert_allclose(full.logprobs[i], other.logprobs[j], atol=1e-5, rtol=0)
    np.testing.assert_array_equal(full.tokens[1], alone.tokens[0])
    default = sampler.generate(params, PROMPTS, sp, seed=3, step=4)
    same = sampler.generate(params, PROMPTS, sp, seed=3, step=99, row_keys=[(4, r) for r in range(4)])
    np.testing.assert_array_equal(default.tokens, same.tokens)
    np.testing.assert_array_equal(default.logprobs, same.logprobs)
    if temperature > 0:  # other keys, other samples
        assert not np.array_equal(full.tokens, default.tokens)
    with pytest.raises(ValueError, match="row_keys has 1 pairs for 4 rows"):
        sampler.generate(params, PROMPTS, sp, row_keys=[(1, 2)])
    with pytest.raises(ValueError, match=r"\[0, 2\*\*31\)"):
        sampler.generate(params, [PROMPTS[0]], sp, row_keys=[(-1, 2)])


def test_prompt_over_the_cache_budget_names_the_row(qwen3, sampler):
    _, params, _ = qwen3
    before = sampler.compile_count
    with pytest.raises(ValueError, match=r"prompts\[1\] has 250 tokens but the cache budget for a "
                                         r"prompt is 240 \(sampler max_len 256 - max_new_tokens 16"):
        sampler.generate(params, [[3] * 10, [3] * 250, [4] * 251], SamplingParams(max_new_tokens=16))
    assert sampler.compile_count == before


def test_shared_prefill_equals_unshared(qwen3, tokenizer, engine_buckets, sampler):
    """Issue 17 item 4: the G samples of a prompt (and equal prompts of different rows)
    prefill once and copy the K/V; same keys -> the same tokens, logprobs within 1e-5 (fp32),
    stop strings and continue_ included."""
    from skillax.engine import Sampler

    _, params, cfg = qwen3
    temperature = 1.0
    assert sampler.share_prefill
    plain = Sampler(cfg, tokenizer, max_len=256, dtype=jnp.float32, buckets=engine_buckets,
                    share_prefill=False)
    sp = SamplingParams(temperature=temperature, max_new_tokens=12, n=4, eos_ids=[],
                        stop_strings=("ro",))
    prompts = [PROMPTS[0], PROMPTS[2]]
    a, st_a = sampler.generate(params, prompts, sp, seed=5, step=1, return_state=True)
    b, st_b = plain.generate(params, prompts, sp, seed=5, step=1, return_state=True)
    assert a.stats["prefill_rows"] == 4 < a.stats["batch"] == 8 and b.stats["prefill_rows"] == 8
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.lengths, b.lengths)
    assert a.stop_reason == b.stop_reason
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5, rtol=0)
    obs = [[7, 8, 9]] * 8
    a2, _ = sampler.continue_(st_a, obs, params)
    b2, _ = plain.continue_(st_b, obs, params)
    np.testing.assert_array_equal(a2.tokens, b2.tokens)
    np.testing.assert_allclose(a2.logprobs, b2.logprobs, atol=1e-5, rtol=0)
    # equal prompts given as separate rows share too (n = 1), distinct ones do not
    rows = [PROMPTS[1]] * 5 + [PROMPTS[3]] * 3
    sp1 = SamplingParams(temperature=temperature, max_new_tokens=8, eos_ids=[])
    c = sampler.generate(params, rows, sp1, seed=2)
    d = plain.generate(params, rows, sp1, seed=2)
    assert c.stats["prefill_rows"] == 4 and d.stats["prefill_rows"] == 8   # 2 distinct -> bucket 4
    np.testing.assert_array_equal(c.tokens, d.tokens)
    np.testing.assert_allclose(c.logprobs, d.logprobs, atol=1e-5, rtol=0)
    assert sampler.generate(params, PROMPTS, sp1).stats["prefill_rows"] == 4


def test_row_floor_keeps_the_shared_prefill(qwen3, tokenizer):
    """model.batch_floor pads the decode rows only (``Buckets.prefill`` keeps the smaller sizes):
    the G samples of a prompt still prefill it once, a call whose prompts are all distinct does
    not share (its padded rows alone would not make a shared prefill), and both sample what the
    unshared sampler samples under the same keys; plan() agrees with generate()."""
    from skillax.engine import Buckets, Sampler

    _, params, cfg = qwen3
    floored = Buckets(batch=(8,), prefill=(2, 4, 8), prompt=(16, 32), new_tokens=(16, 32), cache=(64, 128, 256))
    assert Buckets(batch=(4, 8)).prefill == (4, 8)          # () = the batch sizes
    s = Sampler(cfg, tokenizer, max_len=256, dtype=jnp.float32, buckets=floored)
    plain = Sampler(cfg, tokenizer, max_len=256, dtype=jnp.float32, buckets=floored, share_prefill=False)
    group = SamplingParams(temperature=1.0, max_new_tokens=8, n=4, eos_ids=[])
    prompts = [PROMPTS[0], PROMPTS[2]]
    a, b = s.generate(params, prompts, group, seed=3), plain.generate(params, prompts, group, seed=3)
    assert (a.stats["prefill_rows"], a.stats["batch"], b.stats["prefill_rows"]) == (2, 8, 8)
    assert s.plan(prompts, group)["prefill_rows"] == 2 and s.plan(prompts, group)["shared"]
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5, rtol=0)
    one = SamplingParams(temperature=1.0, max_new_tokens=8, eos_ids=[])
    c = s.generate(params, PROMPTS[:3], one, seed=4)           # 3 distinct rows padded to 8
    assert (c.stats["prefill_rows"], c.stats["batch"]) == (8, 8) and not s.plan(PROMPTS[:3], one)["shared"]
    np.testing.assert_array_equal(c.tokens, plain.generate(params, PROMPTS[:3], one, seed=4).tokens)


def test_compiler_options_parse_and_reach_the_sampling_program(qwen3, sampler, engine_buckets):
    """``model.sampler_xla`` / ``sampling.py --xla``: "k=v,..." parsed by hand-known rules, a
    bad item named in the error; a Sampler built with a real XLA option samples the same
    tokens and logprobs as the default program, and an unknown option fails at compile."""
    from skillax.engine import Sampler
    from skillax.engine.sampler import parse_compiler_options

    assert parse_compiler_options("") == {} and parse_compiler_options(None) == {}
    assert parse_compiler_options(" xla_gpu_autotune_level=0, xla_gpu_enable_triton_gemm=False ,x=ab") == {
        "xla_gpu_autotune_level": 0, "xla_gpu_enable_triton_gemm": False, "x": "ab"}
    assert parse_compiler_options("a=1,,b=-2") == {"a": 1, "b": -2}      # an empty item is skipped
    for bad in ("xla_gpu_autotune_level", "=3", "a=1,b"):
        with pytest.raises(ValueError, match="not name=value"):
            parse_compiler_options(bad)
    _, params, cfg = qwen3
    sp = SamplingParams(temperature=0, max_new_tokens=6, eos_ids=[])
    opt = Sampler(cfg, max_len=256, dtype=jnp.float32, buckets=engine_buckets,
                  compiler_options=parse_compiler_options("xla_embed_ir_in_executable=true"))
    assert opt.compiler_options == {"xla_embed_ir_in_executable": True}
    a, b = sampler.generate(params, PROMPTS, sp), opt.generate(params, PROMPTS, sp)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-6)
    wrong = Sampler(cfg, max_len=256, dtype=jnp.float32, buckets=engine_buckets,
                    compiler_options={"xla_no_such_option_at_all": 1})
    with pytest.raises(Exception, match="xla_no_such_option_at_all"):
        wrong.generate(params, PROMPTS, sp)
