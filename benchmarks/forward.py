"""Prefill throughput: our jitted forward vs transformers (PyTorch) on the same device.

    python benchmarks/forward.py --shape qwen3-8b --batch 8 --seq 2048 [--attn cudnn]

Both sides: bf16 random weights at the named shape, full-sequence forward, logits for the
last position only (prefill). FLOPs = 2 * matmul params * tokens + 4 * L * B * T^2 * H * Dh
(attention scores + weighted sum, full square, the usual convention). Reports tokens/s and
TFLOP/s, and ours as a fraction of the measured bf16 matmul ceiling (--peak, FLOP/s).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import H200_BF16_FLOPS, record, time_fn  # noqa: E402
from skillax.models import transformer  # noqa: E402
from skillax.models.config import named_config  # noqa: E402
from skillax.models.params import init_params  # noqa: E402


def model_flops(cfg, batch, seq):
    D, F, H, KV, Dh, L = (cfg.hidden_size, cfg.intermediate_size, cfg.num_heads, cfg.num_kv_heads,
                          cfg.head_dim, cfg.num_layers)
    matmul_params = L * (D * H * Dh + 2 * D * KV * Dh + H * Dh * D + 3 * D * F)
    return 2 * matmul_params * batch * seq + 4 * L * batch * seq * seq * H * Dh + 2 * batch * D * cfg.vocab_size


def ours(cfg, batch, seq, attn):
    params = init_params(cfg, jax.random.key(0), jnp.bfloat16)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, cfg.vocab_size, (batch, seq)), jnp.int32)
    pos = jnp.broadcast_to(jnp.arange(seq, dtype=jnp.int32), (batch, seq))
    valid = jnp.ones((batch, seq), bool)

    @functools.partial(jax.jit)
    def prefill(params, tokens, pos, valid):
        h, _ = transformer.forward(params, cfg, tokens, pos, valid, attn_impl=attn)
        return transformer.logits(params, cfg, h[:, -1:])

    return time_fn(lambda: prefill(params, tokens, pos, valid).block_until_ready())


def reference(cfg, batch, seq):
    try:
        import torch
        import transformers
    except ImportError:
        return None
    if not torch.cuda.is_available():
        dev = "cpu"
    else:
        dev = "cuda"
    hf = transformers.Qwen3Config(**{k: v for k, v in cfg.to_hf_dict().items()
                                     if k not in ("architectures", "model_type", "torch_dtype")})
    hf._attn_implementation = "sdpa"
    with torch.device(dev):
        model = transformers.Qwen3ForCausalLM(hf).to(torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)

    def run():
        with torch.no_grad():
            model(input_ids=ids, logits_to_keep=1)
        if dev == "cuda":
            torch.cuda.synchronize()

    t = time_fn(run)
    del model
    if dev == "cuda":
        torch.cuda.empty_cache()
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="qwen3-0.6b")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--attn", default="auto", choices=["auto", "xla", "cudnn"])
    ap.add_argument("--peak", type=float, default=H200_BF16_FLOPS)
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--layers", type=int, default=None, help="override depth (quick CPU checks)")
    a = ap.parse_args()
    cfg = named_config(a.shape)
    if a.layers:
        import dataclasses
        cfg = dataclasses.replace(cfg, num_layers=a.layers)
    flops = model_flops(cfg, a.batch, a.seq)
    t_ref = None if a.no_reference else reference(cfg, a.batch, a.seq)
    t_ours = ours(cfg, a.batch, a.seq, a.attn)
    toks = a.batch * a.seq
    shape = dict(model=a.shape, batch=a.batch, seq=a.seq, dtype="bfloat16", attn=a.attn, layers=cfg.num_layers)
    record("forward", "prefill_tokens_per_s", shape, toks / t_ours, toks / t_ref if t_ref else None,
           "tokens/s", None, None)
    record("forward", "prefill_tflops", shape, flops / t_ours / 1e12,
           flops / t_ref / 1e12 if t_ref else None, "TFLOP/s", a.peak / 1e12, flops / t_ours / a.peak)


if __name__ == "__main__":
    main()
