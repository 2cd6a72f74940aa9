"""Train-step throughput: our jitted RL step vs a PyTorch (transformers) train step.

    python benchmarks/train_step.py --shape qwen3-0.6b --batch 8 --seq 2048 [--micro 1]
        [--chunk 512] [--attn cudnn] [--no-remat] [--no-reference]
    python benchmarks/train_step.py --layers 1 --vocab 1024 --batch 2 --seq 64   # CPU smoke
    python benchmarks/train_step.py --shape qwen3-8b --layers 12 --batch 16 --mesh 1,2,1 --devices 2
    python benchmarks/train_step.py --layers 1 --batch 8 --seq 1024 --chunk 128 --loss-tokens 64 --no-reference

``--mesh d,f,t`` runs on a (data, fsdp, tensor) mesh over the first ``--devices`` devices
(default: all; one device = no mesh); ``--batch`` is the global batch, so weak scaling keeps
``batch / devices`` fixed. Reports peak memory per device (``memory_stats``) where available.

Ours: fp32 master params, bf16 compute (``TrainConfig.compute_dtype``), one PPO objective on
all tokens, chunked fp32 logprobs, AdamW + global-norm clip, state donated. ``--loss-tokens N``:
the loss mask covers only the last N positions of each row (an agent row: a long prompt, a
short action), so the LM head runs only on the chunks that hold them (``token_logprobs(mask=)``,
issue 17); the same step with the all-positions mask is timed too, from the same run
(``dense_tokens_per_s``). FLOPs stay those of the all-positions step (the work the result is
equivalent to).
Reference: ``transformers.Qwen3ForCausalLM`` with fp32 params under bf16 autocast, the
built-in LM cross-entropy (full logits), backward and ``torch.optim.AdamW`` (fused on CUDA).
FLOPs per step = 3 x forward FLOPs (forward + backward), forward as in benchmarks/forward.py
plus the LM head over every position (rematerialisation is not counted: MFU convention).
Reports tokens/s and TFLOP/s, and ours
as a fraction of the measured bf16 matmul ceiling (--peak).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import H200_BF16_FLOPS, record, time_fn  # noqa: E402
from benchmarks.forward import model_flops  # noqa: E402
from skillax.models.config import named_config  # noqa: E402
from skillax.models.params import init_params  # noqa: E402
from skillax.rl import train_step as ts  # noqa: E402
from skillax.rl.objectives import ObjectiveConfig  # noqa: E402
from skillax.rl.optim import make_optimizer  # noqa: E402


def peak_memory_gib() -> list[float] | None:
    """Peak bytes in use per local device (GiB), or None where the backend has no stats."""
    try:
        return [round(d.memory_stats()["peak_bytes_in_use"] / 2**30, 2) for d in jax.local_devices()]
    except Exception:  # noqa: BLE001 - CPU has no memory_stats
        return None


def ours(cfg, batch, seq, micro, chunk, attn, remat, mesh_shape=None, devices=None, loss_tokens=0):
    tcfg = ts.TrainConfig(objectives=(("policy", ObjectiveConfig()),), chunk_size=chunk,
                          num_micro_batches=micro, compute_dtype="bfloat16", remat=remat,
                          attn_impl="cudnn" if attn == "cudnn" else "xla")
    opt = make_optimizer(1e-6, 1000, warmup_steps=10)
    devices = jax.devices()[:devices] if devices else jax.devices()
    mesh = None
    if len(devices) > 1:
        from skillax.sharding import make_mesh
        mesh = make_mesh(mesh_shape or (1, -1, 1), devices)
    step = ts.make_train_step(cfg, opt, tcfg, mesh=mesh)
    with jax.default_device(devices[0]):
        params = init_params(cfg, jax.random.key(0), jnp.float32, mesh=mesh)
    if mesh is None:
        state = ts.init_train_state(params, opt)
    else:
        state = jax.jit(lambda p: ts.init_train_state(p, opt),
                        out_shardings=ts.state_shardings(cfg, opt, mesh))(params)
    del params
    rng = np.random.default_rng(0)
    mask = np.ones((batch, seq), np.float32)
    mask[:, 0] = 0
    if loss_tokens:
        mask[:, :seq - loss_tokens] = 0
    b = {"tokens": rng.integers(0, cfg.vocab_size, (batch, seq)).astype(np.int32),
         "positions": np.tile(np.arange(seq, dtype=np.int32), (batch, 1)),
         "valid": np.ones((batch, seq), bool), "old_logprobs": np.full((batch, seq), -10.0, np.float32),
         "objectives": {"policy": {"loss_mask": mask, "advantages": rng.normal(size=batch).astype(np.float32)}}}
    b = ts.shard_batch(b, mesh) if mesh is not None else jax.device_put(b, devices[0])
    holder = {"state": state}

    def run():
        holder["state"], m = step(holder["state"], b, None)
        jax.block_until_ready(m["loss"])
    return time_fn(run, warmup=2, iters=5)


def reference(cfg, batch, seq):
    try:
        import torch
        import transformers
    except ImportError:
        return None
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    hf = transformers.Qwen3Config(**{k: v for k, v in cfg.to_hf_dict().items()
                                     if k not in ("architectures", "model_type", "torch_dtype")})
    hf._attn_implementation = "sdpa"
    with torch.device(dev):
        model = transformers.Qwen3ForCausalLM(hf).float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=dev == "cuda")
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)

    def run():
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if dev == "cuda":
            torch.cuda.synchronize()

    t = time_fn(run, warmup=2, iters=5)
    del model, opt
    if dev == "cuda":
        torch.cuda.empty_cache()
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="qwen3-0.6b")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--micro", type=int, default=1, help="micro-batches per step")
    ap.add_argument("--chunk", type=int, default=512, help="logprob chunk (positions)")
    ap.add_argument("--attn", default="xla", choices=["xla", "cudnn"])
    ap.add_argument("--no-remat", action="store_true")
    ap.add_argument("--peak", type=float, default=H200_BF16_FLOPS)
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--layers", type=int, default=None, help="override depth (quick CPU checks)")
    ap.add_argument("--vocab", type=int, default=None, help="override vocabulary (quick CPU checks)")
    ap.add_argument("--mesh", default="1,-1,1", help="data,fsdp,tensor sizes (-1 fills)")
    ap.add_argument("--devices", type=int, default=0, help="use the first N devices (0: all)")
    ap.add_argument("--loss-tokens", type=int, default=0, help="loss on the last N positions of a row (0: all)")
    a = ap.parse_args()
    mesh_shape = tuple(int(x) for x in a.mesh.split(","))
    cfg = named_config(a.shape)
    if a.layers:
        cfg = dataclasses.replace(cfg, num_layers=a.layers)
    if a.vocab:
        cfg = dataclasses.replace(cfg, vocab_size=a.vocab)
    # model_flops counts the LM head for the last position only (prefill); training scores all
    flops = 3 * (model_flops(cfg, a.batch, a.seq) + 2 * a.batch * (a.seq - 1) * cfg.hidden_size * cfg.vocab_size)
    t_ref = None if a.no_reference else reference(cfg, a.batch, a.seq)
    n_dev = a.devices or len(jax.devices())
    t_ours = ours(cfg, a.batch, a.seq, a.micro, a.chunk, a.attn, not a.no_remat, mesh_shape, n_dev, a.loss_tokens)
    t_dense = (ours(cfg, a.batch, a.seq, a.micro, a.chunk, a.attn, not a.no_remat, mesh_shape, n_dev)
               if a.loss_tokens else None)
    toks = a.batch * a.seq
    shape = dict(model=a.shape, vocab=cfg.vocab_size, batch=a.batch, seq=a.seq, micro=a.micro, chunk=a.chunk,
                 attn=a.attn, remat=not a.no_remat, layers=cfg.num_layers, dtype="bf16 compute / fp32 master",
                 devices=n_dev, mesh=a.mesh if n_dev > 1 else "none", loss_tokens=a.loss_tokens or "all")
    extra = {"dense_tokens_per_s": toks / t_dense} if t_dense else {}
    mem = peak_memory_gib()
    record("train_step", "train_tokens_per_s", shape, toks / t_ours, toks / t_ref if t_ref else None,
           "tokens/s", None, None, tokens_per_s_per_device=toks / t_ours / n_dev, peak_memory_gib=mem, **extra)
    record("train_step", "train_tflops", shape, flops / t_ours / 1e12, flops / t_ref / 1e12 if t_ref else None,
           "TFLOP/s", n_dev * a.peak / 1e12, flops / t_ours / (n_dev * a.peak), peak_memory_gib=mem)


if __name__ == "__main__":
    main()
