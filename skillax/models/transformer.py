"""Qwen3 / Qwen2 / Llama decoder forward pass as a pure function over a params pytree.

Numerics (reference: transformers' ``modeling_qwen3`` / ``modeling_qwen2`` / ``modeling_llama``):
* Qwen2's q/k/v biases (``cfg.qkv_bias``) are added to the fp32 projection outputs.
* RMSNorm statistics, RoPE and attention softmax in fp32.
* Residual stream kept in fp32 (stabler bf16 training; in fp32 identical to HF).
* Matmuls take operands in the compute dtype with ``preferred_element_type=float32``
  (on CPU the only form in which bf16 is faster than fp32; on GPU the tensor-core form).
* Cache-free (training, teacher forcing): layers run under ``lax.scan`` over stacked weights,
  so compile time does not grow with depth; ``remat=True`` wraps the layer in
  ``jax.checkpoint``.
* With a KV cache: decode steps (T == 1), and every chunk on CPU, run an unrolled Python loop
  over layers, each reading its own weights and updating its own cache buffer in place (see
  ``skillax.models.kv_cache`` for the measurement). Callers that run many decode steps pass
  per-layer weights from :func:`split_layers`, made once outside their decode loop; stacked
  weights sliced here are materialised by XLA GPU as a copy per layer per step. Prefill
  chunks on GPU scan over stacked weights (``cache_loop``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from skillax.models.config import ModelConfig
from skillax.models.cache_attention import cache_attention, pallas_attention_ok
from skillax.models.kv_cache import KVCache
from skillax.sharding import constrain, mesh_axis_size

_NEG = -1e30


def rms_norm(x: jax.Array, weight: jax.Array, eps: float) -> jax.Array:
    """RMSNorm over the last axis: ``w * x / sqrt(mean(x^2) + eps)``; statistics in fp32.

    Shapes: x (..., N), weight (N,). Returns the dtype of ``x``.
    Reference: ``Qwen3RMSNorm`` (weight multiplies after casting back to the input dtype).
    """
    xf = x.astype(jnp.float32)
    var = jnp.mean(xf * xf, axis=-1, keepdims=True)
    y = (xf * jax.lax.rsqrt(var + eps)).astype(x.dtype)
    return weight.astype(x.dtype) * y


def rope_sin_cos(positions: jax.Array, head_dim: int, theta: float) -> tuple[jax.Array, jax.Array]:
    """Rotate-half RoPE tables. positions (B, T) int -> sin, cos (B, T, Dh) fp32."""
    inv_freq = 1.0 / (theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
    freqs = positions.astype(jnp.float32)[..., None] * inv_freq  # (B, T, Dh/2)
    emb = jnp.concatenate([freqs, freqs], axis=-1)
    return jnp.sin(emb), jnp.cos(emb)


def apply_rope(x: jax.Array, sin: jax.Array, cos: jax.Array) -> jax.Array:
    """x (B, T, N, Dh); sin/cos (B, T, Dh). ``x*cos + rotate_half(x)*sin`` in fp32."""
    xf = x.astype(jnp.float32)
    half = x.shape[-1] // 2
    rot = jnp.concatenate([-xf[..., half:], xf[..., :half]], axis=-1)
    out = xf * cos[:, :, None, :] + rot * sin[:, :, None, :]
    return out.astype(x.dtype)


def _lowp_einsum_impl(spec: str, a, b):
    return jnp.einsum(spec, a, b, preferred_element_type=jnp.float32)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def lowp_einsum(spec: str, a, b):
    """``einsum(spec, a, b)`` with low-precision (e.g. bf16) operands and an fp32 result, whose
    backward pass also multiplies in the operands' dtype with fp32 accumulation.

    Without this, the cotangent of the fp32 result is fp32 and XLA upcasts the bf16 operand:
    both backward products then run as fp32 matmuls (on CPU ~5x slower than bf16 x bf16 ->
    fp32). Gradients are rounded to the operand dtype like PyTorch's bf16 autocast.
    ``spec`` must be "X,Y->Z" where every index of X and Y also appears in another term.
    """
    return _lowp_einsum_impl(spec, a, b)


def _lowp_fwd(spec, a, b):
    return _lowp_einsum_impl(spec, a, b), (a, b)


def _lowp_bwd(spec, res, g):
    a, b = res
    ins, out = spec.split("->")
    sa, sb = ins.split(",")
    gl = g.astype(a.dtype)
    da = jnp.einsum(f"{out},{sb}->{sa}", gl, b, preferred_element_type=jnp.float32).astype(a.dtype)
    db = jnp.einsum(f"{sa},{out}->{sb}", a, gl, preferred_element_type=jnp.float32).astype(b.dtype)
    return da, db


lowp_einsum.defvjp(_lowp_fwd, _lowp_bwd)


def einsum(spec: str, a, b, dtype):
    """``spec`` product of a and b cast to ``dtype``, fp32 result. fp32: plain einsum (exact
    parity); lower precision: :func:`lowp_einsum`. Specs use explicit letters (no "...")."""
    a, b = a.astype(dtype), b.astype(dtype)
    if jnp.dtype(dtype) == jnp.float32:
        return _lowp_einsum_impl(spec, a, b)
    return lowp_einsum(spec, a, b)


def _mm(x, w, dtype):
    """x (B, T, I) @ w (I, O) with operands in ``dtype`` and fp32 accumulation/result."""
    return einsum("bti,io->bto", x, w, dtype)


def attention(q, k, v, mask, dtype):
    """Grouped-query attention.

    q (B, T, H, Dh); k, v (B, S, KV, Dh); mask (B, T, S) bool (True = attend).
    Returns (B, T, H, Dh) fp32. Softmax in fp32; fully masked rows give a uniform average
    (finite), which only occurs on padding queries whose outputs are ignored.
    """
    B, T, H, Dh = q.shape
    KV = k.shape[2]
    qg = q.reshape(B, T, KV, H // KV, Dh)
    scores = einsum("btkgd,bskd->bkgts", qg, k, dtype) * (Dh ** -0.5)
    scores = jnp.where(mask[:, None, None, :, :], scores, _NEG)
    probs = jax.nn.softmax(scores, axis=-1)
    out = einsum("bkgts,bskd->btkgd", probs, v, dtype)
    return out.reshape(B, T, H, Dh)


def _layer(cfg: ModelConfig, dtype, attn_impl, x, lp, sin, cos, mask, kv=None, index=None):
    """One decoder layer. x (B, T, D) fp32 residual. kv: this layer's cache (k, v) or None.
    mask: (B, T, S) bool, or with ``attn_impl == "pallas"`` the (B, S) fp32 slot bias of
    :func:`skillax.models.cache_attention.cache_attention`."""
    B, T, _ = x.shape
    H, KV, Dh = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    x = constrain(x, ("batch", None, None))          # no-ops without a mesh (sharding.constrain)
    h = rms_norm(x, lp["attn_norm"], cfg.rms_norm_eps).astype(dtype)
    if "qkv_proj" in lp:  # decode weights from fuse_layers: one GEMM instead of three
        qkv = _mm(h, lp["qkv_proj"], dtype)
        if "qkv_bias" in lp:
            qkv = qkv + lp["qkv_bias"].astype(jnp.float32)
        q, k, v = jnp.split(qkv, (H * Dh, (H + KV) * Dh), axis=-1)
    else:
        q, k, v = (_mm(h, lp[n], dtype) for n in ("q_proj", "k_proj", "v_proj"))
        if cfg.qkv_bias:  # (B, T, out) fp32 + (out,)
            q, k, v = (y + lp[n].astype(jnp.float32) for y, n in ((q, "q_bias"), (k, "k_bias"), (v, "v_bias")))
    q = q.reshape(B, T, H, Dh)
    k = k.reshape(B, T, KV, Dh)
    v = v.reshape(B, T, KV, Dh).astype(dtype)
    if cfg.qk_norm:
        q = rms_norm(q, lp["q_norm"], cfg.rms_norm_eps)
        k = rms_norm(k, lp["k_norm"], cfg.rms_norm_eps)
    # heads over "tensor" for q, k and v together or not at all: cuDNN attention's partitioner
    # rejects q/k/v with different shardings (e.g. 8 KV heads on a 16-way tensor axis)
    heads = KV % mesh_axis_size("tensor") == 0 and H % mesh_axis_size("tensor") == 0
    q = constrain(apply_rope(q, sin, cos).astype(dtype), ("batch", None, "heads" if heads else None, None))
    k = constrain(apply_rope(k, sin, cos).astype(dtype), ("batch", None, "kv" if heads else None, None))
    v = constrain(v, ("batch", None, "kv" if heads else None, None))
    if kv is None:
        k_all, v_all, new_kv = k, v, None
    else:
        ck, cv = kv
        ck = jax.lax.dynamic_update_slice(ck, k.astype(ck.dtype), (0, index, 0, 0))
        cv = jax.lax.dynamic_update_slice(cv, v.astype(cv.dtype), (0, index, 0, 0))
        k_all, v_all, new_kv = ck, cv, (ck, cv)
    if attn_impl == "pallas":
        a = cache_attention(q, k_all, v_all, mask, index)
    elif attn_impl == "xla" or kv is not None:
        a = attention(q, k_all, v_all, mask, dtype)
    else:
        # Fused (cuDNN flash) causal attention for the cache-free path. Exact for valid
        # positions of RIGHT-padded rows (the trainer's layout): a valid query only sees
        # earlier, valid keys. Padded positions are garbage and must be loss-masked.
        a = jax.nn.dot_product_attention(q, k_all, v_all, is_causal=True, implementation=attn_impl)
    a = a.reshape(B, T, H * Dh)
    x = x + _mm(a, lp["o_proj"], dtype)
    h = rms_norm(x, lp["mlp_norm"], cfg.rms_norm_eps).astype(dtype)
    if "gate_up_proj" in lp:
        g, u = jnp.split(_mm(h, lp["gate_up_proj"], dtype), 2, axis=-1)
    else:
        g, u = _mm(h, lp["gate_proj"], dtype), _mm(h, lp["up_proj"], dtype)
    x = x + _mm((jax.nn.silu(g) * u).astype(dtype), lp["down_proj"], dtype)
    return x, new_kv


def split_layers(layers) -> tuple[dict, ...]:
    """Per-layer weight trees from the stacked ``params["layers"]`` (each leaf (L, ...) ->
    L leaves (...)). Inside a jitted program the slices are materialised once (one extra copy
    of the layer weights for the program's lifetime). A tuple/list input is returned as a tuple.
    """
    if isinstance(layers, (tuple, list)):
        return tuple(layers)
    n = jax.tree.leaves(layers)[0].shape[0]
    return tuple(jax.tree.map(lambda a, i=i: a[i], layers) for i in range(n))


def fuse_layers(layers, dtype=None) -> tuple[dict, ...]:
    """Per-layer decode weights with the input projections concatenated: ``qkv_proj``
    (D, (H + 2 KV) Dh) = [q | k | v] and ``gate_up_proj`` (D, 2 F) = [gate | up] replace the
    five separate matrices (``_layer`` then runs 2 GEMMs where it ran 5: a decode step is
    bound by per-kernel latency as much as by bandwidth); Qwen2's q/k/v biases likewise become
    one ``qkv_bias`` ((H + 2 KV) Dh,). Leaves are cast to ``dtype`` (None: kept). Like
    :func:`split_layers`, inside a jitted program the result is materialised once.

    Meant for weights not sharded over "tensor": concatenating column-sharded matrices is
    still correct, but XLA then moves shards every call (the sampler does not fuse there).
    Numerically identical to the separate products (each output column is the same dot
    product). Shapes: per layer qkv_proj (D, (H + 2 KV) Dh), gate_up_proj (D, 2 F).
    """
    out = []
    for lp in split_layers(layers):
        lp = dict(lp)
        cast = (lambda a: a.astype(dtype)) if dtype is not None else (lambda a: a)
        lp["qkv_proj"] = jnp.concatenate([cast(lp.pop(n)) for n in ("q_proj", "k_proj", "v_proj")], axis=-1)
        if "q_bias" in lp:
            lp["qkv_bias"] = jnp.concatenate([cast(lp.pop(n)) for n in ("q_bias", "k_bias", "v_bias")], axis=-1)
        lp["gate_up_proj"] = jnp.concatenate([cast(lp.pop(n)) for n in ("gate_proj", "up_proj")], axis=-1)
        out.append(lp)
    return tuple(out)


def stack_layers(layers):
    """Inverse of :func:`split_layers`: per-layer trees -> one tree of (L, ...) leaves (a
    stacked tree is returned as is)."""
    if isinstance(layers, (tuple, list)):
        return jax.tree.map(lambda *a: jnp.stack(a), *layers)
    return layers


def auto_attention(cache_free: bool, dtype, backend: str) -> str:
    """``attn_impl="auto"`` of :func:`forward`: "cudnn" (fused flash attention) for the
    cache-free path on GPU in bf16/fp16 -- the only dtypes cuDNN's kernel takes (fp32 failed on
    the H200 with "Q must be fp16/bf16", issue 23 item 9) -- else "xla"."""
    half = jnp.dtype(dtype) in (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))
    return "cudnn" if (cache_free and half and backend == "gpu") else "xla"


def forward(params: dict, cfg: ModelConfig, tokens: jax.Array, positions: jax.Array,
            valid: jax.Array, cache: KVCache | None = None, *, dtype=None,
            remat: bool = False, attn_impl: str = "auto", cache_loop: str = "auto",
            cache_attn: str = "xla", fresh: bool = False) -> tuple[jax.Array, KVCache | None]:
    """Run the decoder.

    Args:
      params: the tree described in ``skillax.models.params`` (any float dtype; fp32 master
        weights are cast per layer). With a cache, ``params["layers"]`` may also be the tuple
        of per-layer trees from :func:`split_layers`.
      cfg: static model config.
      tokens: (B, T) int32 token ids.
      positions: (B, T) int32 RoPE positions.
      valid: (B, T) bool, False on padding (padding keys are never attended).
      cache: None for training/teacher forcing (causal over the T axis), or a ``KVCache``:
        the chunk is written at slots ``cache.index .. +T`` and attends all earlier valid slots
        (the caller keeps ``index + T <= max_len``; dynamic_update_slice would clamp).
      dtype: compute dtype (default: the embedding's dtype).
      remat: rematerialise each layer in the backward pass.
      attn_impl: "xla" (explicit masked softmax; any padding), "cudnn" (fused flash
        attention; cache-free path only; right-padded rows only — see ``_layer``), or "auto"
        (cudnn on GPU for the cache-free path in bf16/fp16 -- the kernel's dtypes -- else xla;
        the trainer checks right padding on the host: ``rl.objectives.validate_batch``).
      cache_loop: with a cache, how layers are iterated: "unroll" (a Python loop; per-layer
        buffers updated in place: the fast decode step), "scan" (stacked weights and a stacked
        copy of the cache under ``lax.scan``: one compiled layer body. On the H200 the sampler
        program compiled in 73-78 s fully unrolled (Qwen3-8B / 0.6B shapes) vs 7.5 s fully
        scanned; the stacking copies are small next to a prefill chunk's compute. The mixed
        program -- scanned prefill, unrolled decode -- is not yet timed on the GPU),
        "auto" (unroll for T == 1 or on CPU, where XLA upcasts scanned bf16 weight stacks,
        else scan).
      cache_attn: attention of a chunk over the cache: "xla" (masked softmax over all S
        slots, scores in memory) or "pallas" (``skillax.models.cache_attention``: one flash
        kernel per layer over the slots the chunk can see; Pallas interpret mode off GPU;
        shapes it does not handle fall back to "xla"). Ignored without a cache.
      fresh: the cache holds no valid slot before this chunk (a new cache: the caller
        guarantees it; ``Sampler.generate``). With ``cache_loop="scan"`` the layers then attend
        within the chunk only and no stacked copy of the cache is made (the copy is 2x the
        cache's memory: Qwen3-8B, 64 rows x 2048-token prompts ran out of memory on it).
    Returns:
      hidden: (B, T, D) after the final norm, in the compute dtype.
      cache: the updated cache (index advanced by T) or None.
    """
    dtype = jnp.dtype(dtype or params["embed"].dtype)
    B, T = tokens.shape
    embed = params["embed"]
    if cache is not None and embed.dtype.itemsize == 2:
        # gather the raw 16-bit rows: XLA CPU upcasts a bf16 gather's table to fp32, and inside
        # the decode loop hoists that convert out as an fp32 copy of the whole embedding
        # (not differentiable: the cache path is inference only)
        x = jax.lax.bitcast_convert_type(
            jax.lax.bitcast_convert_type(embed, jnp.uint16)[tokens], embed.dtype)
    else:
        x = embed[tokens]
    x = x.astype(jnp.float32)  # (B, T, D) fp32 residual
    sin, cos = rope_sin_cos(positions, cfg.head_dim, cfg.rope_theta)
    valid = valid.astype(bool)

    if cache is None:
        causal = jnp.tril(jnp.ones((T, T), bool))
        mask = causal[None] & valid[:, None, :]  # (B, T, T)
        index = None
    else:
        index = cache.index
        S = cache.max_len
        slot_valid = jax.lax.dynamic_update_slice(cache.slot_valid, valid, (0, index))
        q_slot = index + jnp.arange(T)
        mask = (jnp.arange(S)[None, :] <= q_slot[:, None])[None] & slot_valid[:, None, :]

    if attn_impl == "auto":
        attn_impl = auto_attention(cache is None, dtype, jax.default_backend())
    if attn_impl not in ("xla", "cudnn"):
        raise ValueError(f"attn_impl must be 'xla' or 'cudnn', got {attn_impl!r}")
    if cache_attn not in ("xla", "pallas"):
        raise ValueError(f"cache_attn must be 'xla' or 'pallas', got {cache_attn!r}")
    if (cache_attn == "pallas" and cache is not None and cfg.num_heads % cfg.num_kv_heads == 0
            and pallas_attention_ok(T, cache.max_len, cfg.head_dim, cfg.num_heads // cfg.num_kv_heads)):
        attn_impl = "pallas"
        mask = jnp.where(slot_valid, 0.0, _NEG).astype(jnp.float32)  # (B, S); causal in-kernel
    layer_fn = functools.partial(_layer, cfg, dtype, attn_impl)
    if remat:
        layer_fn = jax.checkpoint(layer_fn, prevent_cse=False)

    if cache is None:
        def body(x, lp):
            x, _ = layer_fn(x, lp, sin, cos, mask)
            return x, None
        x, _ = jax.lax.scan(body, x, params["layers"])
        new_cache = None
    else:
        if cache_loop == "auto":
            cache_loop = "unroll" if (T == 1 or jax.default_backend() == "cpu") else "scan"
        n_layers = len(params["layers"]) if isinstance(params["layers"], (tuple, list)) else \
            jax.tree.leaves(params["layers"])[0].shape[0]
        if n_layers != len(cache.k):
            raise ValueError(f"cache has {len(cache.k)} layers, params {n_layers}")
        if cache_loop == "unroll":
            ks, vs = list(cache.k), list(cache.v)
            for i, lp in enumerate(split_layers(params["layers"])):
                x, (ks[i], vs[i]) = layer_fn(x, lp, sin, cos, mask, (ks[i], vs[i]), index)
        elif cache_loop == "scan" and fresh:
            x, (kc, vc) = _fresh_chunk_scan(cfg, dtype, cache_attn, remat, params["layers"], x,
                                            sin, cos, valid, cache.k[0].dtype)
            ks = [jax.lax.dynamic_update_slice(cache.k[i], kc[i], (0, index, 0, 0)) for i in range(n_layers)]
            vs = [jax.lax.dynamic_update_slice(cache.v[i], vc[i], (0, index, 0, 0)) for i in range(n_layers)]
        elif cache_loop == "scan":
            # the stacked cache is read-only input; only the chunk's (L, B, T, KV, Dh) keys and
            # values come out and are written into the per-layer buffers in place (peak ~2x
            # the cache, not 3x as with the whole stacked cache as scan output)
            def body(x, xs):
                lp, ck, cv = xs
                x, (ck, cv) = layer_fn(x, lp, sin, cos, mask, (ck, cv), index)
                return x, (jax.lax.dynamic_slice_in_dim(ck, index, T, axis=1),
                           jax.lax.dynamic_slice_in_dim(cv, index, T, axis=1))
            x, (kc, vc) = jax.lax.scan(body, x, (stack_layers(params["layers"]), jnp.stack(cache.k),
                                                 jnp.stack(cache.v)))
            ks = [jax.lax.dynamic_update_slice(cache.k[i], kc[i], (0, index, 0, 0)) for i in range(n_layers)]
            vs = [jax.lax.dynamic_update_slice(cache.v[i], vc[i], (0, index, 0, 0)) for i in range(n_layers)]
        else:
            raise ValueError(f"cache_loop must be 'auto', 'unroll' or 'scan', got {cache_loop!r}")
        new_cache = KVCache(k=tuple(ks), v=tuple(vs), slot_valid=slot_valid, index=index + T)

    hidden = rms_norm(x, params["final_norm"], cfg.rms_norm_eps).astype(dtype)
    return hidden, new_cache


def _fresh_chunk_scan(cfg, dtype, cache_attn, remat, layers, x, sin, cos, valid, cache_dtype):
    """Layers under ``lax.scan`` for a chunk that is the whole context (``forward(fresh=True)``):
    each layer's "cache" is the chunk's own T slots, so attention sees exactly what the full
    cache would show (every earlier slot is invalid). Returns (x, (kc, vc)) with kc, vc
    (L, B, T, KV, Dh) the chunk's keys and values, for the caller to write into its cache."""
    B, T = valid.shape
    KV, Dh = cfg.num_kv_heads, cfg.head_dim
    if cache_attn == "pallas" and pallas_attention_ok(T, T, Dh, cfg.num_heads // KV):
        impl, mask = "pallas", jnp.where(valid, 0.0, _NEG).astype(jnp.float32)
    else:
        impl, mask = "xla", jnp.tril(jnp.ones((T, T), bool))[None] & valid[:, None, :]
    layer_fn = functools.partial(_layer, cfg, dtype, impl)
    if remat:
        layer_fn = jax.checkpoint(layer_fn, prevent_cse=False)
    empty = jnp.zeros((B, T, KV, Dh), cache_dtype)

    def body(x, lp):
        return layer_fn(x, lp, sin, cos, mask, (empty, empty), jnp.zeros((), jnp.int32))

    return jax.lax.scan(body, x, stack_layers(layers))


def lm_head_weight(params: dict, cfg: ModelConfig) -> jax.Array:
    """(D, V) output projection: ``embed.T`` when tied, else ``lm_head``."""
    return params["embed"].T if cfg.tie_word_embeddings else params["lm_head"]


def logits(params: dict, cfg: ModelConfig, hidden: jax.Array) -> jax.Array:
    """Full fp32 logits (B, T, V). For tests and small vocabularies; training uses
    ``skillax.rl.logprobs`` which never materialises this tensor."""
    w = lm_head_weight(params, cfg)
    return jnp.einsum("btd,dv->btv", hidden, w.astype(hidden.dtype), preferred_element_type=jnp.float32)
