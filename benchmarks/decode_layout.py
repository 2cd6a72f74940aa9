"""Ablation: per-step decode time of layer-loop / KV-cache layouts (why the engine unrolls).

    python benchmarks/decode_layout.py <qwen3-8b|qwen3-0.6b|tiny> <batch> [variants]

Greedy decode of 32 steps (random bf16 weights, 512 cache slots) under ``lax.fori_loop`` with:
  scan          layers under ``lax.scan`` with the stacked (L, B, S, KV, Dh) cache as scan
                xs/ys (the engine before per-layer buffers; the H200 rows below were measured
                then; today ``forward(cache_loop="scan")``, which also stacks/unstacks the
                per-layer buffers every step);
  scan_carry    scan over stacked weights, stacked cache carried and updated at [layer, :, index];
  unroll_slice  Python loop over layers, weights sliced from the stacked arrays inside the loop;
  unroll_split  Python loop, weights pre-split per layer outside jit, stacked cache;
  unroll_list   Python loop, per-layer weights and per-layer cache buffers (the engine's layout).
Prints ms per decode step and tokens/s. No PyTorch counterpart: it compares our own layouts
(``benchmarks/sampling.py`` compares the engine with transformers). H200 results:
``benchmarks/results/decode_layout.jsonl``.
"""
import functools
import json
import sys
import time

import jax
import jax.numpy as jnp

from skillax.models import config as mc
from skillax.models.params import init_params
from skillax.models.transformer import _layer, forward, rms_norm, rope_sin_cos, apply_rope, _mm, einsum
from skillax.models.kv_cache import init_cache, KVCache

shape = sys.argv[1] if len(sys.argv) > 1 else "qwen3-8b"
if shape == "tiny":
    cfg = mc.ModelConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_layers=3, num_heads=4,
                         num_kv_heads=2, head_dim=16, rope_theta=1e4, max_position_embeddings=1024,
                         qk_norm=True, tie_word_embeddings=True)
else:
    cfg = mc.named_config(shape)
B = int(sys.argv[2]) if len(sys.argv) > 2 else 64
S = 512
NSTEP = 32
dt = jnp.bfloat16
params = init_params(cfg, jax.random.key(0), dtype=dt)
L = cfg.num_layers


def head(params, h):
    return jnp.einsum("bd,dv->bv", h, params["lm_head"] if "lm_head" in params else params["embed"].T,
                      preferred_element_type=jnp.float32)


def attn_reduce(q, k, v, mask):
    # q (B,1,H,Dh) k,v (B,S,KV,Dh) mask (B,1,S): mul+reduce, no dot
    Bq, T, H, Dh = q.shape
    KV = k.shape[2]
    qg = q.reshape(Bq, KV, H // KV, Dh).astype(jnp.float32)
    s = jnp.einsum("bkgd,bskd->bkgs", qg.astype(dt), k, preferred_element_type=jnp.float32) * Dh ** -0.5
    s = jnp.where(mask[:, 0][:, None, None, :], s, -1e30)
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bkgs,bskd->bkgd", p.astype(dt), v, preferred_element_type=jnp.float32)
    return o.reshape(Bq, 1, H * Dh)


def layer_stacked(x, lp, sin, cos, mask, ks, vs, i, index):
    Bq, T, _ = x.shape
    H, KV, Dh = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    h = rms_norm(x, lp["attn_norm"], cfg.rms_norm_eps).astype(dt)
    q = _mm(h, lp["q_proj"], dt).reshape(Bq, T, H, Dh)
    k = _mm(h, lp["k_proj"], dt).reshape(Bq, T, KV, Dh)
    v = _mm(h, lp["v_proj"], dt).reshape(Bq, T, KV, Dh).astype(dt)
    q = rms_norm(q, lp["q_norm"], cfg.rms_norm_eps)
    k = rms_norm(k, lp["k_norm"], cfg.rms_norm_eps)
    q = apply_rope(q, sin, cos).astype(dt)
    k = apply_rope(k, sin, cos).astype(dt)
    if isinstance(ks, list):
        ks[i] = jax.lax.dynamic_update_slice(ks[i], k, (0, index, 0, 0))
        vs[i] = jax.lax.dynamic_update_slice(vs[i], v, (0, index, 0, 0))
        kk, vv = ks[i], vs[i]
    else:
        ks = jax.lax.dynamic_update_slice(ks, k[None], (i, 0, index, 0, 0))
        vs = jax.lax.dynamic_update_slice(vs, v[None], (i, 0, index, 0, 0))
        kk = jax.lax.dynamic_index_in_dim(ks, i, 0, keepdims=False)
        vv = jax.lax.dynamic_index_in_dim(vs, i, 0, keepdims=False)
    a = attn_reduce(q, kk, vv, mask)
    x = x + _mm(a, lp["o_proj"], dt)
    h = rms_norm(x, lp["mlp_norm"], cfg.rms_norm_eps).astype(dt)
    g = _mm(h, lp["gate_proj"], dt)
    u = _mm(h, lp["up_proj"], dt)
    x = x + _mm((jax.nn.silu(g) * u).astype(dt), lp["down_proj"], dt)
    return x, ks, vs


def step_unrolled(params, layers_list, tok, pos, ks, vs, slot_valid, index):
    x = params["embed"][tok].astype(jnp.float32)
    sin, cos = rope_sin_cos(pos, cfg.head_dim, cfg.rope_theta)
    slot_valid = jax.lax.dynamic_update_slice(slot_valid, jnp.ones((tok.shape[0], 1), bool), (0, index))
    mask = (jnp.arange(S)[None, :] <= index)[None] & slot_valid[:, None, :]
    for i in range(L):
        lp = layers_list[i] if layers_list is not None else jax.tree.map(lambda a: a[i], params["layers"])
        x, ks, vs = layer_stacked(x, lp, sin, cos, mask, ks, vs, i, index)
    h = rms_norm(x, params["final_norm"], cfg.rms_norm_eps).astype(dt)
    return head(params, h[:, 0]), ks, vs, slot_valid


def run_scan_carry(params, ks, vs, slot_valid, tok):
    def body(i, c):
        ks, vs, slot_valid, tok = c
        index = i + 10
        x = params["embed"][tok[:, None]].astype(jnp.float32)
        pos = index * jnp.ones((B, 1), jnp.int32)
        sin, cos = rope_sin_cos(pos, cfg.head_dim, cfg.rope_theta)
        slot_valid = jax.lax.dynamic_update_slice(slot_valid, jnp.ones((B, 1), bool), (0, index))
        mask = (jnp.arange(S)[None, :] <= index)[None] & slot_valid[:, None, :]

        def lbody(c2, xs):
            x, ks, vs, li = c2
            lp = xs
            x, ks, vs = layer_stacked(x, lp, sin, cos, mask, ks, vs, li, index)
            return (x, ks, vs, li + 1), None
        (x, ks, vs, _), _ = jax.lax.scan(lbody, (x, ks, vs, jnp.int32(0)), params["layers"])
        h = rms_norm(x, params["final_norm"], cfg.rms_norm_eps).astype(dt)
        return ks, vs, slot_valid, jnp.argmax(head(params, h[:, 0]), -1).astype(jnp.int32)
    return jax.lax.fori_loop(0, NSTEP, body, (ks, vs, slot_valid, tok))


def run_scan(params, cache, tok):
    def body(i, c):
        cache, tok = c
        h, cache = forward(params, cfg, tok[:, None], (i + 10) * jnp.ones((B, 1), jnp.int32),
                           jnp.ones((B, 1), bool), cache, dtype=dt, cache_loop="scan")
        lg = head(params, h[:, 0])
        return cache, jnp.argmax(lg, -1).astype(jnp.int32)
    return jax.lax.fori_loop(0, NSTEP, body, (cache, tok))


def make_run_unrolled(split_weights, list_cache):
    def run(params, layers_list, ks, vs, slot_valid, tok):
        def body(i, c):
            ks, vs, slot_valid, tok = c
            lg, ks, vs, slot_valid = step_unrolled(params, layers_list, tok[:, None],
                                                   (i + 10) * jnp.ones((B, 1), jnp.int32),
                                                   ks, vs, slot_valid, i + 10)
            return ks, vs, slot_valid, jnp.argmax(lg, -1).astype(jnp.int32)
        return jax.lax.fori_loop(0, NSTEP, body, (ks, vs, slot_valid, tok))
    return run


def bench(name, fn, args, donate, next_args):
    f = jax.jit(fn, donate_argnums=donate)
    t0 = time.perf_counter()
    out = f(*args)
    jax.block_until_ready(out)
    comp = time.perf_counter() - t0
    times = []
    for _ in range(3):
        a = next_args(out)
        t = time.perf_counter()
        out = f(*a)
        jax.block_until_ready(out)
        times.append(time.perf_counter() - t)
    ms = sorted(times)[1] / NSTEP * 1e3
    print(json.dumps(dict(variant=name, shape=shape, batch=B, S=S, ms_per_step=round(ms, 3),
                          tok_s=round(B / ms * 1e3, 1), compile_s=round(comp, 1))), flush=True)
    del out


tok0 = jnp.zeros((B,), jnp.int32)
variants = sys.argv[3].split(",") if len(sys.argv) > 3 else ["scan", "scan_carry", "unroll_slice", "unroll_split", "unroll_list"]
for v in variants:
    if v == "scan":
        cache = init_cache(cfg, B, S, dt)
        cache = cache._replace(index=jnp.int32(10))
        bench(v, run_scan, (params, cache, tok0), (1,),
              lambda out: (params, out[0]._replace(index=jnp.int32(10)), out[1]))
    elif v == "scan_carry":
        c = init_cache(cfg, B, S, dt)
        bench(v, run_scan_carry, (params, jnp.stack(c.k), jnp.stack(c.v), c.slot_valid, tok0), (1, 2),
              lambda out: (params, out[0], out[1], out[2], out[3]))
    else:
        split = v in ("unroll_split", "unroll_list")
        lst = v == "unroll_list"
        layers_list = ([jax.tree.map(lambda a: a[i], params["layers"]) for i in range(L)] if split else None)
        c = init_cache(cfg, B, S, dt)
        ks, vs = (list(c.k), list(c.v)) if lst else (jnp.stack(c.k), jnp.stack(c.v))
        fn = make_run_unrolled(split, lst)
        bench(v, fn, (params, layers_list, ks, vs, c.slot_valid, tok0), (2, 3),
              lambda out, ll=layers_list: (params, ll, out[0], out[1], out[2], out[3]))
