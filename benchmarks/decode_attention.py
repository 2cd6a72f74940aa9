"""Decode-step attention: the Pallas kernel (filled slots only) vs the masked XLA path vs torch SDPA.

    python benchmarks/decode_attention.py --model qwen3-8b --batch 64 --slots 512 --filled 384
    python benchmarks/decode_attention.py --model tiny --batch 4 --slots 128 --filled 100  # CPU check

One "step" = the attention of every layer of the model shape (L cache buffers (B, S, KV, Dh)
in bf16, one query token per row, the first ``--filled`` slots valid). Ours:
``skillax.models.cache_attention.cache_attention`` with T = 1 (sweeping ``--block-k`` / ``--warps`` /
``--stages`` lists); reference in the same run: ``transformer.attention`` (what the sampler
ran before: masked softmax over all S slots) and, on CUDA, torch's
``scaled_dot_product_attention`` (GQA, boolean mask, (B, KV, S, Dh) cache as in transformers'
static cache) over the same S slots. Limit: the filled slots' K and V bytes read once at
``--bandwidth``. Median of ``--iters`` steps. Writes benchmarks/results/decode_attention.jsonl.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import H200_HBM_BYTES_PER_S, record, time_fn  # noqa: E402
from benchmarks.sampling import model_config  # noqa: E402
from skillax.models.cache_attention import cache_attention  # noqa: E402
from skillax.models.transformer import _NEG, attention  # noqa: E402


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def time_torch(cfg, B, S, n, iters) -> float | str:
    """Seconds per step of torch SDPA over L layers (CUDA only)."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        return f"failed: {e}"
    if not torch.cuda.is_available():
        return "skipped: no CUDA"
    dev, dt = "cuda", torch.bfloat16
    H, KV, Dh, L = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.num_layers
    ks = [torch.randn(B, KV, S, Dh, device=dev, dtype=dt) for _ in range(L)]
    vs = [torch.randn(B, KV, S, Dh, device=dev, dtype=dt) for _ in range(L)]
    q = torch.randn(B, H, 1, Dh, device=dev, dtype=dt)
    mask = torch.zeros(B, 1, 1, S, dtype=torch.bool, device=dev)
    mask[..., :n] = True

    def step():
        for k, v in zip(ks, vs):
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        torch.cuda.synchronize()

    return time_fn(step, warmup=3, iters=iters)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--slots", type=int, default=128, help="cache length S")
    ap.add_argument("--filled", type=int, default=100, help="slots in use (the query's slot + 1)")
    ap.add_argument("--block-k", default="64")
    ap.add_argument("--warps", default="4")
    ap.add_argument("--stages", default="2")
    ap.add_argument("--splits", default="0", help="key-axis splits; 0 = automatic")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--bandwidth", type=float, default=H200_HBM_BYTES_PER_S)
    args = ap.parse_args(argv)
    cfg = model_config(args.model)
    B, S, n = args.batch, args.slots, args.filled
    H, KV, Dh, L = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.num_layers
    dt = jnp.bfloat16
    keys = jax.random.split(jax.random.key(0), 2 * L + 1)
    ks = tuple(jax.random.normal(keys[i], (B, S, KV, Dh), dt) for i in range(L))
    vs = tuple(jax.random.normal(keys[L + i], (B, S, KV, Dh), dt) for i in range(L))
    q = jax.random.normal(keys[-1], (B, H, Dh), dt)
    valid = jnp.broadcast_to(jnp.arange(S) < n, (B, S))
    bias = jnp.where(valid, 0.0, _NEG).astype(jnp.float32)
    n_slots = jnp.int32(n)

    @jax.jit
    def xla_step(q, ks, vs):
        return sum(attention(q[:, None], k, v, valid[:, None, :], dt)[:, 0, 0, 0].sum() for k, v in zip(ks, vs))

    def pallas_step_fn(**kw):
        @jax.jit
        def step(q, ks, vs, bias, n_slots):
            return sum(cache_attention(q[:, None], k, v, bias, n_slots - 1, **kw)[:, 0, 0, 0].astype(jnp.float32).sum()
                       for k, v in zip(ks, vs))
        return lambda: step(q, ks, vs, bias, n_slots).block_until_ready()

    xla_s = time_fn(lambda: xla_step(q, ks, vs).block_until_ready(), warmup=2, iters=args.iters)
    torch_s = time_torch(cfg, B, S, n, args.iters)
    need = 2 * L * B * n * KV * Dh * 2           # filled K and V bytes, read once
    limit_s = need / args.bandwidth
    shape = dict(model=args.model, batch=B, slots=S, filled=n, layers=L, heads=H, kv_heads=KV, head_dim=Dh)
    best = None
    for bk, w, st, sp in itertools.product(_ints(args.block_k), _ints(args.warps), _ints(args.stages),
                                           _ints(args.splits)):
        kw = dict(block_k=bk, num_warps=w, num_stages=st, splits=sp or None)
        try:
            t0 = time.perf_counter()
            fn = pallas_step_fn(**kw)
            fn()
            compile_s = time.perf_counter() - t0
            ours_s = time_fn(fn, warmup=2, iters=args.iters)
        except Exception as e:  # noqa: BLE001 - one bad tiling must not hide the others
            print(f"{kw}: failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        rec = record("decode_attention", "decode_attention", shape, ours=round(ours_s * 1e3, 4),
                     reference=round(xla_s * 1e3, 4), unit="ms per step (all layers)",
                     limit=round(limit_s * 1e3, 4), fraction_of_limit=round(limit_s / ours_s, 4),
                     torch_sdpa_ms=round(torch_s * 1e3, 4) if isinstance(torch_s, float) else torch_s,
                     kernel=kw, compile_seconds=round(compile_s, 2), bytes_needed=need,
                     bandwidth=args.bandwidth)
        if best is None or rec["ours"] < best["ours"]:
            best = rec
    if best:
        print("best:", best["kernel"], best["ours"], "ms; xla", best["reference"], "ms; torch",
              best["torch_sdpa_ms"], flush=True)


if __name__ == "__main__":
    main()
