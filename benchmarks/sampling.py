"""Sampling throughput: skillax's sampler beside transformers' ``generate``, and the HBM roofline.

    python benchmarks/sampling.py --model qwen3-0.6b --batch 64 --prompt-len 256 --new-tokens 256
    python benchmarks/sampling.py --model tiny --batch 4 --prompt-len 32 --new-tokens 16   # CPU check
    python benchmarks/sampling.py --model smollm2-135m --batch 8 --prompt-len 400 --new-tokens 48 \
        --turns 4 --obs-len 64 --reference none                                # continuation vs re-encode

Random weights at the named shape (qwen3-0.6b / 1.7b / 8b, smollm2-135m, tiny) or at the
shape of a HF folder's ``config.json``. Both sides sample at temperature 1 without
truncation and with EOS disabled, so every row produces exactly ``--new-tokens`` tokens;
tokens/s = batch x new tokens / wall time of one call (prefill included), median of
``--repeats`` calls after a warm-up (ours: compile; theirs: torch.compile / cache warm-up).

Limits (``benchmarks/roofline.py``; meaningless on CPU: pass the machine's ceilings):
* ``call_limit`` / ``fraction_of_call_limit`` -- the physical limit of the call as timed:
  prefill at ``--matmul-flops`` (compute-bound at these shapes) plus decode at
  ``--bandwidth``; defaults are the H200's measured 4.3e12 B/s and 7.9e14 FLOP/s.
* ``limit`` / ``fraction_of_limit`` -- the decode-only HBM roofline of the lines before
  2026-12-05 (batch x bandwidth / (weight bytes + KV bytes of the average context prompt +
  new / 2)). It leaves prefill out although the timed call includes it, so a long-prompt call
  cannot reach it (Qwen3-8B x 256 x (1,024 -> 256): at most 43 %); kept for comparison.
* ``--split-prefill 1`` (default) also times the call with one new token (prefill and the
  first sampled token, no decode step; same chunk and cache shapes) and reports
  ``prefill_seconds``, ``decode_tokens_per_s`` = batch x (new - 1) / (call - prefill), its
  fraction of the decode-only roofline (``decode_fraction_of_limit``) and call_limit's prefill
  seconds / the measured ones (``prefill_fraction_of_limit``); ``split_prefill`` says why when
  it could not (``split_prefill``).

``--mesh d,f,t --devices N`` shards the weights (logical rules) and the KV cache (batch over
data x fsdp, KV heads over tensor) on a mesh of the first N devices (default: one device).

``--turns K`` also times a K-turn episode (each turn appends ``--obs-len`` new tokens): our
``continue_`` (prefills only the new tokens) vs re-encoding the whole history every turn.

Writes JSON lines to benchmarks/results/sampling.jsonl: name, shape, device, ours, reference,
unit, limit, fraction_of_limit, command, date (+ details).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.roofline import H200_BANDWIDTH, H200_MATMUL_FLOPS, call_limit, decode_roofline_tokens_per_s  # noqa: E402
from skillax.engine import Buckets, Sampler, SamplingParams
from skillax.engine.sampler import parse_compiler_options
from skillax.engine.hlo import compiled_text, weight_upcasts
from skillax.models.config import NAMED_SHAPES, ModelConfig, named_config
from skillax.models.kv_cache import cache_bytes
from skillax.models.params import init_params

EXTRA_SHAPES = {
    "smollm2-135m": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_layers=30,
                         num_heads=9, num_kv_heads=3, head_dim=64, tie_word_embeddings=True,
                         qk_norm=False, rope_theta=100000.0, rms_norm_eps=1e-5,
                         architecture="LlamaForCausalLM"),
    "tiny": dict(vocab_size=4096, hidden_size=128, intermediate_size=384, num_layers=4,
                 num_heads=4, num_kv_heads=2, head_dim=32, tie_word_embeddings=True),
}
RESULTS = (pathlib.Path(os.environ.get("SKILLAX_RESULTS") or pathlib.Path(__file__).resolve().parent / "results")
           / "sampling.jsonl")


def model_config(name: str) -> ModelConfig:
    if name in NAMED_SHAPES:
        return named_config(name)
    if name in EXTRA_SHAPES:
        return ModelConfig(**EXTRA_SHAPES[name])
    return ModelConfig.from_pretrained(name)


def memory_fields(cfg: ModelConfig, batch: int, context: int, dtype) -> dict:
    """Peak device bytes of the process (``memory_stats()['peak_bytes_in_use']``; None on CPU)
    beside what the call needs at least: the weights plus the KV cache of ``batch`` rows of
    ``context`` (prompt + new) slots (issue 17 item 3: peak = weights + KV + a small working set)."""
    try:
        peak = (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")
    except Exception:  # noqa: BLE001 - a backend without memory stats reports None
        peak = None
    weights = cfg.num_params() * jnp.dtype(dtype).itemsize
    kv = cache_bytes(cfg, batch, context, dtype)
    return dict(peak_device_bytes=peak, weight_bytes=int(weights), kv_cache_bytes=int(kv),
                peak_over_weights_plus_kv=round(peak / (weights + kv), 3) if peak else None)


def time_ours(sampler, params, prompts, sp, repeats, reserve=0):
    t0 = time.perf_counter()
    sampler.generate(params, prompts, sp, seed=0, reserve=reserve)
    compile_s = time.perf_counter() - t0
    times, out = [], None
    for r in range(repeats):
        t0 = time.perf_counter()
        out = sampler.generate(params, prompts, sp, seed=r + 1, reserve=reserve)
        times.append(time.perf_counter() - t0)
    assert int(out.lengths.min()) == sp.max_new_tokens
    return statistics.median(times), compile_s


def split_prefill(sampler, params, prompts, sp, repeats, call_s, decode_limit, prefill_limit_s) -> dict:
    """Time the call's prefill alone: the same prompts with one new token (prefill, LM head,
    one sampled token; no decode step), its cache grown to the full call's size (``reserve``)
    so the prefill runs in the same chunk / cache / piece shapes. Returns prefill_seconds,
    decode_tokens_per_s = rows x (new - 1) / (call - prefill) (the full call's first token
    also comes from the prefill), decode_fraction_of_limit (of the decode-only roofline) and
    prefill_fraction_of_limit (call_limit's prefill seconds / measured); where the shapes
    differ anyway or the difference is not positive, {"split_prefill": why} instead."""
    sp1 = dataclasses.replace(sp, max_new_tokens=1)
    full = sampler.plan(prompts, sp, params=params)
    reserve = full["new_bucket"] - sampler.plan(prompts, sp1, params=params)["new_bucket"]
    one = sampler.plan(prompts, sp1, reserve=reserve, params=params)
    keys = ("batch", "prefill_rows", "chunk", "cache_len", "prefill_chunk")
    if any(full[k] != one[k] for k in keys):
        return {"split_prefill": f"shapes differ: {[(k, full[k], one[k]) for k in keys if full[k] != one[k]]}"}
    prefill_s, _ = time_ours(sampler, params, prompts, sp1, repeats, reserve=reserve)
    if call_s <= prefill_s:
        return {"split_prefill": f"call {call_s:.4f} s <= prefill {prefill_s:.4f} s", "prefill_seconds": round(prefill_s, 4)}
    decode_tps = len(prompts) * sp.n * (sp.max_new_tokens - 1) / (call_s - prefill_s)
    return dict(prefill_seconds=round(prefill_s, 4), decode_tokens_per_s=round(decode_tps, 2),
                decode_fraction_of_limit=round(decode_tps / decode_limit, 5),
                prefill_fraction_of_limit=round(prefill_limit_s / prefill_s, 5))


def time_transformers(cfg, dtype_name, prompts_np, new, repeats, mode):
    """Median seconds of HF ``generate`` (mode "eager", or "static": static cache, which
    generate compiles with torch.compile on CUDA)."""
    import torch
    import transformers

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tdtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[dtype_name]
    hf = cfg.to_hf_dict()
    cls = transformers.Qwen3Config if hf["model_type"] == "qwen3" else transformers.LlamaConfig
    hcfg = cls(**{k: v for k, v in hf.items() if k not in ("architectures", "model_type", "torch_dtype")})
    with torch.device(dev):
        model = transformers.AutoModelForCausalLM.from_config(hcfg, dtype=tdtype).eval()
    ids = torch.tensor(prompts_np, device=dev)
    kw = dict(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
              min_new_tokens=new, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
              eos_token_id=None, pad_token_id=0)
    if mode == "static":
        # generate compiles the forward itself with a static cache on CUDA (its auto-compile,
        # CUDA graphs); a hand-wrapped torch.compile(model.forward) fails there because
        # generate keeps outputs of one graph replay across the next
        kw["cache_implementation"] = "static"
    times = []
    with torch.no_grad():
        for r in range(repeats + (2 if mode == "static" else 1)):
            if dev == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            model.generate(**kw)
            if dev == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    return statistics.median(times[(2 if mode == "static" else 1):])


def multiturn(sampler, params, prompts, sp, turns, obs_len, vocab, repeats):
    """Seconds per episode: continue_ vs re-encoding the full history each turn (greedy)."""
    rng = np.random.default_rng(0)
    obs = [[rng.integers(3, vocab, obs_len).tolist() for _ in prompts] for _ in range(turns - 1)]

    def with_continue():
        out, st = sampler.generate(params, prompts, sp, return_state=True)
        for o in obs:
            out, st = sampler.continue_(st, o, params)
        return out

    def reencode():
        hist = [list(p) for p in prompts]
        out = sampler.generate(params, hist, sp)
        for o in obs:
            hist = [h + out.tokens[i, :out.lengths[i]].tolist() + o[i] for i, h in enumerate(hist)]
            out = sampler.generate(params, hist, sp)
        return out

    res = {}
    for name, fn in (("continue", with_continue), ("reencode", reencode)):
        fn()  # compile every bucket this episode touches
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        res[name] = statistics.median(ts)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--bandwidth", type=float, default=H200_BANDWIDTH, help="bytes/s (H200 measured: 4.3e12)")
    ap.add_argument("--matmul-flops", type=float, default=H200_MATMUL_FLOPS,
                    help="FLOP/s of a large bf16 matmul (H200 measured: 7.9e14)")
    ap.add_argument("--split-prefill", type=int, default=1,
                    help="1: also time prefill + one step, to report decode alone (module docstring)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reference", default="auto", help="auto | none | eager | static | eager,static")
    ap.add_argument("--turns", type=int, default=0, help="also time a multi-turn episode")
    ap.add_argument("--obs-len", type=int, default=64)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--mesh", default="1,-1,1", help="data,fsdp,tensor sizes (with --devices > 1)")
    ap.add_argument("--devices", type=int, default=1, help="shard over the first N devices (1: no mesh)")
    ap.add_argument("--fuse", type=int, default=1, help="1: fused qkv / gate-up decode weights (default)")
    ap.add_argument("--profile", action="store_true", help="add a kernel summary of one call (GPU)")
    ap.add_argument("--cache-attn", default="auto", choices=["auto", "pallas", "xla"],
                    help="attention over the KV cache (Sampler(cache_attention=...))")
    ap.add_argument("--xla", default="", help="compiler options of the sampling program: k=v,k=v")
    args = ap.parse_args(argv)
    xla_opts = parse_compiler_options(args.xla)

    cfg = model_config(args.model)
    dtype = jnp.dtype(args.dtype)
    mesh = None
    if args.devices > 1:
        from skillax.sharding import make_mesh
        mesh = make_mesh(tuple(int(x) for x in args.mesh.split(",")), jax.devices()[:args.devices])
    params = init_params(cfg, jax.random.key(0), dtype, mesh=mesh)
    B, P, N = args.batch, args.prompt_len, args.new_tokens
    max_len = P + N + max(0, args.turns - 1) * (args.obs_len + N + 64) + 64
    buckets = Buckets(prompt=tuple(sorted({P, *Buckets().prompt})), new_tokens=tuple(sorted({N, *Buckets().new_tokens})))
    sampler = Sampler(cfg, None, max_len=max_len, dtype=dtype, buckets=buckets, fuse_weights=bool(args.fuse),
                      compiler_options=xla_opts, cache_attention=args.cache_attn)
    prompts_np = np.random.default_rng(0).integers(3, cfg.vocab_size, (B, P))
    prompts = prompts_np.tolist()
    sp = SamplingParams(temperature=1.0, max_new_tokens=N, eos_ids=[])
    device = jax.devices()[0].device_kind
    ours_s, compile_s = time_ours(sampler, params, prompts, sp, args.repeats)
    upcasts = weight_upcasts(compiled_text(sampler, params, prompts, sp), params)
    ours = B * N / ours_s
    profile = None
    if args.profile:
        from benchmarks.kernel_profile import kernel_summary
        profile = kernel_summary(lambda: sampler.generate(params, prompts, sp, seed=99).tokens)
        print(json.dumps(profile), flush=True)

    modes = args.reference
    if modes == "auto":
        import torch
        modes = "eager,static" if torch.cuda.is_available() else "eager"
    refs = {}
    for mode in [m for m in modes.split(",") if m and m != "none"]:
        try:
            refs[mode] = B * N / time_transformers(cfg, args.dtype, prompts_np, N, args.repeats, mode)
        except Exception as e:  # noqa: BLE001 - a missing compiler must not hide our number
            refs[mode] = f"failed: {type(e).__name__}: {str(e)[:200]}"
    numeric = [v for v in refs.values() if isinstance(v, float)]
    # N devices: N x the bandwidth, reached only if every byte is read once on one device (TP)
    limit, step_bytes = decode_roofline_tokens_per_s(cfg, B, P, N, dtype.itemsize, args.bandwidth * args.devices)
    call = call_limit(cfg, B, P, N, dtype.itemsize, bandwidth=args.bandwidth * args.devices,
                      matmul_flops=args.matmul_flops * args.devices)
    split = {}
    if args.split_prefill and N > 1:
        split = split_prefill(sampler, params, prompts, sp, args.repeats, ours_s, limit, call["prefill_s"])
    shape = dict(model=args.model, batch=B, prompt_len=P, new_tokens=N, dtype=args.dtype, devices=args.devices,
                 mesh=args.mesh if mesh is not None else "none")
    common = dict(device=device, command="python " + " ".join([sys.argv[0], *(argv or sys.argv[1:])]),
                  date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    rows = [dict(name="sampling", shape=shape, ours=round(ours, 2),
                 reference=round(max(numeric), 2) if numeric else None, unit="tokens/s",
                 limit=round(limit, 2), fraction_of_limit=round(ours / limit, 5),
                 call_limit=round(call["tokens_per_s"], 2),
                 fraction_of_call_limit=round(ours / call["tokens_per_s"], 5),
                 call_limit_detail={k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in call.items()},
                 matmul_flops=args.matmul_flops, **split,
                 reference_detail={k: (round(v, 2) if isinstance(v, float) else v) for k, v in refs.items()},
                 seconds_per_call=round(ours_s, 4), compile_seconds=round(compile_s, 2),
                 ms_per_token_step=round(1000 * ours_s / N, 2), bytes_per_decode_step=int(step_bytes),
                 bandwidth=args.bandwidth, fp32_weight_copies_in_program=upcasts,
                 fuse=bool(args.fuse), cache_attention=sampler._cache_attn(params),
                 **memory_fields(cfg, B, P + N, dtype),
                 xla_flags=os.environ.get("XLA_FLAGS", ""), compiler_options=xla_opts,
                 **({"kernel_profile": profile} if profile else {}), **common)]
    if args.turns > 1:
        mt = multiturn(sampler, params, prompts, SamplingParams(temperature=0, max_new_tokens=N, eos_ids=[]),
                       args.turns, args.obs_len, cfg.vocab_size, args.repeats)
        rows.append(dict(name="sampling_multiturn", shape={**shape, "turns": args.turns, "obs_len": args.obs_len},
                         ours=round(mt["continue"], 3), reference=round(mt["reencode"], 3),
                         unit="seconds/episode (ours: continue_, reference: re-encode history)",
                         limit=None, fraction_of_limit=None,
                         speedup=round(mt["reencode"] / mt["continue"], 2), **common))
    for r in rows:
        print(json.dumps(r), flush=True)
    out = pathlib.Path(args.out)
    if out.is_dir():
        out = out / "sampling.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
