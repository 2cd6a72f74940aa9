"""Attention of a chunk over the KV cache as one Pallas (Triton) kernel: flash attention that
reads only the slots the chunk can see, and never materialises the (B, H, T, S) scores.

The XLA path (``transformer.attention`` with a (B, T, S) mask) reads all ``S`` slots of K and
V and runs scores, masked softmax and the value product as separate kernels, with the fp32
scores in memory: a decode step reads every slot of a mostly empty cache, and a long prefill
runs out of memory (Qwen3-8B, 64 rows x 2048-token prompts, 4096 slots: a 125 GiB
allocation). Here each program owns one (row b, KV head h, block of BT chunk tokens, key
split) and runs the FlashAttention-2 online softmax (Dao 2023, Alg. 1) over slots ``0 ..
index + last query of the block`` only; with T = 1 and few programs the key axis is split as in
Flash-Decoding (Dao et al. 2023) and the partial results are combined in fp32. The loop bound
is a device scalar, so one compiled program serves every step while a decode call fills its
cache.

Mask: slot j is visible to chunk token t of row b iff ``bias[b, j] == 0`` (the cache's
``slot_valid`` after this chunk's write: left padding, rows' invalid slots) and
``j <= index + t`` (causal; the chunk sits at slots ``index .. index + T - 1``).

Layout: the (B, S, KV, Dh) cache is read in place (a program's slot rows are ``KV * Dh``
apart; ``jax.experimental.pallas.ops.gpu.decode_attention`` wants (B, KV, S, Dh) and would
transpose the cache every call). The G = H / KV query heads of a KV head and BT chunk tokens
form one tile of BT * G rows (row r = token r // G, head r % G); a decode step's G rows are
one 16-row tile (the smallest tensor-core tile) loaded and stored with a row mask: no padded
copy of q or of the output (measured 0.2 ms per Qwen3-8B decode step at batch 64).

On GPU it compiles through Triton; elsewhere it runs in Pallas interpret mode (tests: slow,
but the same kernel body).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

#: smallest query tile (tensor-core M); a decode step's G heads are masked up to it
_MIN_ROWS = 16
#: largest query tile of a prefill chunk (BT * G rows)
_MAX_ROWS = 64
#: programs wanted per call before the key axis is split (the H200 has 132 SMs)
_MIN_PROGRAMS = 256
#: masked score (finite: a fully masked row averages its scanned values instead of NaN)
_NEG = -1e30


def _kernel(index_ref, q_ref, k_ref, v_ref, bias_ref, *out_refs, block_k: int, split_len: int,
            splits: int, scale: float, precision, normalize: bool, group: int, rows_used: int,
            chunk: int):
    """One (row b, KV head h, query block qb, key split s) program.

    Refs: index_ref () int32 slot of chunk token 0; q_ref (R, Dh) with row r = chunk token
    ``qb * R // group + r // group``, head ``r % group`` (rows >= ``rows_used`` lie outside
    the array: loaded as 0, never stored); k_ref, v_ref (split_len, Dh); bias_ref (split_len,)
    fp32 (0 = valid slot). Outputs: o (R, Dh), and unless ``normalize`` the running max m (R,)
    and sum l (R,) of this split, for the combine.
    """
    p = pl.program_id(2)
    qb, s = p // splits, p % splits
    rows = q_ref.shape[0]
    tokens_per_block = rows // group
    index = index_ref[()]
    q_slot = index + qb * tokens_per_block + jnp.arange(rows) // group        # (R,)
    last = jnp.minimum(index + (qb + 1) * tokens_per_block, index + chunk)     # slots < last
    n_here = jnp.clip(last - s * split_len, 0, split_len)
    masked_rows = rows_used < rows
    in_rows = (jnp.arange(rows) < rows_used)[:, None]
    q = plgpu.load(q_ref, mask=in_rows, other=0) if masked_rows else q_ref[...]

    def body(j, carry):
        o, m, l = carry
        start = pl.multiple_of(j * block_k, block_k)
        sl = pl.ds(start, block_k)
        qk = plgpu.dot(q, k_ref[sl, :], trans_b=True, precision=precision) * scale  # (R, bk) fp32
        slot = s * split_len + start + jnp.arange(block_k)
        qk = qk + bias_ref[sl][None, :] + jnp.where(slot[None, :] <= q_slot[:, None], 0.0, _NEG)
        m_next = jnp.maximum(m, qk.max(axis=-1))
        corr = jnp.exp(m - m_next)
        pr = jnp.exp(qk - m_next[:, None])
        l = corr * l + pr.sum(axis=-1)
        v = v_ref[sl, :]
        o = corr[:, None] * o + plgpu.dot(pr.astype(v.dtype), v, precision=precision)
        return o, m_next, l

    init = (jnp.zeros((rows, q.shape[1]), jnp.float32),
            jnp.full((rows,), jnp.finfo(jnp.float32).min, jnp.float32),
            jnp.zeros((rows,), jnp.float32))
    o, m, l = jax.lax.fori_loop(0, pl.cdiv(n_here, block_k), body, init)
    if normalize:
        o = (o / l[:, None]).astype(out_refs[0].dtype)
        if masked_rows:
            plgpu.store(out_refs[0], o, mask=in_rows)
        else:
            out_refs[0][...] = o
    else:
        o_ref, m_ref, l_ref = out_refs
        o_ref[...] = o
        m_ref[...] = m
        l_ref[...] = l


def _query_rows(chunk: int, group: int) -> int:
    """Rows R of a query tile: BT * G with BT the largest power of two dividing ``chunk`` and
    R <= 64; at least 16 (a decode step's G rows are masked up to 16)."""
    bt = chunk & -chunk
    while bt * group > _MAX_ROWS and bt > 1:
        bt //= 2
    return max(_MIN_ROWS, bt * group)


def pallas_attention_ok(chunk: int, slots: int, head_dim: int, heads_per_kv: int,
                        block_k: int = 32) -> bool:
    """Whether :func:`cache_attention` handles this shape (else use the masked XLA path):
    ``slots`` a multiple of ``block_k``, power-of-two ``head_dim`` >= 16 and G = H / KV, and
    a chunk of one token or one whose T * G query rows fill whole tiles (:func:`_query_rows`)."""
    pow2 = lambda x: x > 0 and x & (x - 1) == 0  # noqa: E731
    if not (slots % block_k == 0 and head_dim >= 16 and pow2(head_dim) and pow2(heads_per_kv)
            and heads_per_kv <= _MAX_ROWS):
        return False
    # a chunk's T * G rows must split into whole tiles (T = 24 with G = 1 would need a
    # 16-row tile and a partial one)
    return chunk == 1 or (chunk * heads_per_kv) % _query_rows(chunk, heads_per_kv) == 0


def cache_attention(q: jax.Array, k: jax.Array, v: jax.Array, bias: jax.Array,
                    index: jax.Array, *, block_k: int = 32, splits: int | None = None,
                    num_warps: int = 4, num_stages: int = 3,
                    interpret: bool | None = None) -> jax.Array:
    """Grouped-query attention of a chunk of T tokens (at cache slots ``index .. index+T-1``)
    over the cache slots ``0 .. index + T - 1``, causal within the chunk.

    Args:
      q: (B, T, H, Dh) queries (RoPE applied), in the compute dtype.
      k, v: (B, S, KV, Dh) the layer's cache buffers, this chunk's keys/values written.
      bias: (B, S) fp32: 0 where the slot holds a valid token for row b, ``_NEG`` elsewhere.
        Slots >= index + T are never read.
      index: () int32, the slot of chunk token 0.
      block_k: slots per inner block (S must be a multiple; :func:`pallas_attention_ok`).
        block_k, num_warps, num_stages: Triton tiling; the defaults (32, 4, 3) were within 5 %
        of the best of a decode sweep on the H200 at Qwen3-8B shape for batch 64 x 512 slots,
        64 x 4096 and 8 x 2048 (``benchmarks/results/decode_attention.jsonl``).
      splits: key-axis splits (flash-decoding); None picks 1 unless the call has fewer than
        256 programs (then enough to reach it, partial results combined here in fp32).
      interpret: Pallas interpret mode; None = on any backend but GPU.
    Returns:
      (B, T, H, Dh) in ``q.dtype``: softmax(q k^T / sqrt(Dh) + mask) v with fp32 statistics,
      operands in the input dtype and fp32 accumulation. A query whose visible slots are all
      masked (a left-padding position) gets an average of its scanned values (finite; its
      output is never used).
    Raises:
      ValueError: unsupported shapes (see :func:`pallas_attention_ok`).
    Reference: ``transformer.attention`` with the (B, T, S) mask ``slot_valid & causal`` (tests
    check parity in fp32 to 1e-5).
    """
    B, T, H, Dh = q.shape
    _, S, KV, _ = k.shape
    G = H // KV
    if H % KV or not pallas_attention_ok(T, S, Dh, G, block_k):
        raise ValueError(f"cache_attention: unsupported shape q {q.shape}, k {k.shape}, "
                         f"block_k {block_k}")
    R = _query_rows(T, G)
    n_qb = max(1, T * G // R)
    if splits is None:
        splits = 1
        while B * KV * n_qb * splits < _MIN_PROGRAMS and S % (2 * splits * block_k) == 0:
            splits *= 2
    if S % (splits * block_k):
        raise ValueError(f"S={S} is not a multiple of splits*block_k={splits * block_k}")
    split_len = S // splits
    if interpret is None:
        interpret = jax.default_backend() != "gpu"
    precision = jax.lax.Precision.HIGHEST if q.dtype == jnp.float32 else None
    normalize = splits == 1
    kernel = functools.partial(_kernel, block_k=block_k, split_len=split_len, splits=splits,
                               scale=1.0 / math.sqrt(Dh), precision=precision,
                               normalize=normalize, group=G, rows_used=min(R, T * G), chunk=T)
    kv_spec = pl.BlockSpec((None, split_len, None, Dh), lambda b, h, p: (b, p % splits, h, 0))
    in_specs = [pl.BlockSpec((), lambda b, h, p: ()),
                pl.BlockSpec((None, None, R, Dh), lambda b, h, p: (b, h, p // splits, 0)),
                kv_spec, kv_spec,
                pl.BlockSpec((None, split_len), lambda b, h, p: (b, p % splits))]
    if normalize:
        out_specs = pl.BlockSpec((None, None, R, Dh), lambda b, h, p: (b, h, p, 0))
        out_shape = jax.ShapeDtypeStruct((B, KV, T * G, Dh), q.dtype)
    else:
        rows = n_qb * R
        out_specs = [pl.BlockSpec((None, None, None, R, Dh), lambda b, h, p: (b, h, p % splits, p // splits, 0)),
                     pl.BlockSpec((None, None, None, R), lambda b, h, p: (b, h, p % splits, p // splits)),
                     pl.BlockSpec((None, None, None, R), lambda b, h, p: (b, h, p % splits, p // splits))]
        out_shape = [jax.ShapeDtypeStruct((B, KV, splits, rows, Dh), jnp.float32),
                     jax.ShapeDtypeStruct((B, KV, splits, rows), jnp.float32),
                     jax.ShapeDtypeStruct((B, KV, splits, rows), jnp.float32)]
    # (B, T, KV, G, Dh) -> (B, KV, T * G, Dh): a free reshape when T == 1
    qt = q.reshape(B, T, KV, G, Dh).transpose(0, 2, 1, 3, 4).reshape(B, KV, T * G, Dh)
    out = pl.pallas_call(
        kernel, grid=(B, KV, n_qb * splits), in_specs=in_specs, out_specs=out_specs,
        out_shape=out_shape, interpret=interpret, name="skillax_cache_attention",
        compiler_params=plgpu.CompilerParams(num_warps=num_warps, num_stages=num_stages),
    )(jnp.asarray(index, jnp.int32), qt, k, v, bias.astype(jnp.float32))
    if not normalize:
        o, m, l = out
        m_all = m.max(axis=2, keepdims=True)
        corr = jnp.exp(m - m_all)                                  # (B, KV, splits, rows)
        out = ((o * corr[..., None]).sum(axis=2)
               / (l * corr).sum(axis=2)[..., None]).astype(q.dtype)[:, :, :T * G]
    return out.reshape(B, KV, T, G, Dh).transpose(0, 2, 1, 3, 4).reshape(B, T, H, Dh)
