"""Chunked fp32 per-token log-probabilities and entropy from hidden states.

The trainer never materialises the full (B, T, V) fp32 logits: for Qwen3's vocabulary
(V = 151,936) at 8 x 4096 tokens they would take 8 * 4096 * 151936 * 4 B ~ 19.9 GB
(PITFALLS 9). Instead the sequence axis is cut into chunks of ``chunk_size`` positions; a
``lax.map`` computes, per chunk, ``logits = h @ W`` in fp32 (bf16 inputs use a bf16 matmul
with fp32 accumulation), ``log_softmax`` in fp32 (PITFALLS 8), the target logprob and the
entropy. The chunk body is wrapped in ``jax.checkpoint`` so the backward pass recomputes one
chunk's logits at a time instead of storing them all: peak memory follows the chunk.

Alignment (ARCHITECTURE.md, PITFALLS 4): ``logprobs[:, t] = log p(tokens[:, t] | tokens[:, :t])``
comes from the hidden state at position ``t - 1``; position 0 has no prediction and gets 0
(logprob and entropy).

Temperature belongs to the policy (PITFALLS 6): the trainer scores ``softmax(logits / T)``,
the same distribution the sampler drew from.

Truncated sampling (PITFALLS 7) -- our decision: top-k / top-p < 1 is **refused**
(``ValueError``) unless ``renormalize=True``, in which case the trainer scores the
distribution renormalised over the kept set computed by :func:`truncation_mask` (the sampler
must use the same function). Without it the step-0 ratio would equal the kept mass, not 1.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from skillax.models.transformer import einsum as lowp_or_fp32_einsum

#: logit given to tokens outside the top-k / top-p kept set (finite, so 0 * NEG_LOGIT = 0).
NEG_LOGIT = -1e30


def check_sampling(temperature, top_k: int | None, top_p: float | None, renormalize: bool) -> None:
    """Validate the training-time sampling knobs (raise ``ValueError`` on a bad combination)."""
    if isinstance(temperature, (int, float)) and not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    truncated = top_k is not None or (top_p is not None and top_p < 1.0)
    if truncated and not renormalize:
        raise ValueError(
            f"truncated sampling (top_k={top_k}, top_p={top_p}) in training rollouts makes the "
            "importance ratio equal the kept probability mass, not 1 (PITFALLS 7); pass "
            "renormalize=True to score the renormalised distribution, or sample untruncated")


def truncation_mask(logits: jax.Array, top_k: int | None = None, top_p: float | None = None) -> jax.Array:
    """Kept set of top-k then top-p truncation (HF order: top-k first, top-p on the rest).

    Args:
      logits: (..., V) float logits, temperature already applied.
      top_k: keep tokens whose logit >= the k-th largest (ties at the boundary are kept).
      top_p: of what remains, keep the smallest prefix in descending probability whose mass
        before each kept token is < top_p (so the top token is always kept; ties at the
        threshold probability are kept).
    Returns: (..., V) bool.
    """
    keep = jnp.ones(logits.shape, bool)
    if top_k is not None:
        kth = jax.lax.top_k(logits, top_k)[0][..., -1:]
        keep = logits >= kth
    if top_p is not None and top_p < 1.0:
        x = jnp.where(keep, logits, NEG_LOGIT)
        p = jax.nn.softmax(x.astype(jnp.float32), axis=-1)
        ps = jnp.sort(p, axis=-1)[..., ::-1]
        kept_sorted = (jnp.cumsum(ps, axis=-1) - ps) < top_p
        threshold = jnp.min(jnp.where(kept_sorted, ps, jnp.inf), axis=-1, keepdims=True)
        keep = keep & (p >= threshold)
    return keep


def _chunk_logprobs(h, w, y, temperature, top_k, top_p):
    """One chunk: h (B, C, D), w (D, V), y (B, C) int -> logp (B, C), entropy (B, C) fp32."""
    # bf16 operands: the model's low-precision einsum keeps the backward in bf16 x bf16 -> fp32.
    logits = lowp_or_fp32_einsum("bcd,dv->bcv", h, w.astype(h.dtype), h.dtype)  # (B, C, V) fp32
    logits = logits.astype(jnp.float32) / temperature
    if top_k is not None or (top_p is not None and top_p < 1.0):
        logits = jnp.where(truncation_mask(logits, top_k, top_p), logits, NEG_LOGIT)
    logz = jax.nn.logsumexp(logits, axis=-1)  # (B, C)
    logp_all = logits - logz[..., None]                                   # (B, C, V)
    logp = jnp.take_along_axis(logp_all, y[..., None], axis=-1)[..., 0]
    # -sum p log p as a sum of non-negative terms (no logz - E[logits] cancellation);
    # masked tokens have p = 0 and a finite logit, so they add exactly 0.
    entropy = -jnp.sum(jnp.exp(logp_all) * logp_all, axis=-1)
    return logp, entropy


def token_logprobs(
    hidden: jax.Array,
    head: jax.Array,
    tokens: jax.Array,
    *,
    temperature: float | jax.Array = 1.0,
    chunk_size: int | None = 512,
    top_k: int | None = None,
    top_p: float | None = None,
    renormalize: bool = False,
    mask: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Per-token logprobs of ``tokens`` and predictive entropy, chunked over the sequence.

    Args:
      hidden: (B, T, D) final hidden states (after the final norm), any float dtype.
      head: (D, V) LM head weight (``lm_head_weight(params, cfg)``).
      tokens: (B, T) int target tokens (the same rows the hidden states were computed from).
      temperature: sampling temperature T > 0; logits are divided by it.
      chunk_size: positions per chunk (static); None = one chunk (unchunked reference).
      top_k, top_p, renormalize: see the module docstring (refused unless renormalize).
      mask: optional (B, T) bool, the positions whose values the caller uses (a loss mask, or
        the union of several). A chunk with no such position in any row is skipped
        (``lax.cond``: no (B, c, V) logits, forward or backward) and returns 0 there; every
        chunk that holds one is computed exactly as without ``mask``. Agent rows are mostly
        prompt, so most chunks of the LM head are skipped (issue 17: only loss positions need
        vocabulary logits). None = every chunk.
    Returns:
      logprobs (B, T) fp32 with ``logprobs[:, t] = log p(tokens[:, t] | tokens[:, :t])`` and
      ``logprobs[:, 0] = 0``; entropy (B, T) fp32 in nats of the distribution that
      predicted position t (0 at t = 0). Padding positions carry values of no meaning:
      multiply by a loss mask.
    Raises:
      ValueError: shape mismatch, bad chunk size, bad sampling knobs.
    """
    check_sampling(temperature, top_k, top_p, renormalize)
    if hidden.ndim != 3 or head.ndim != 2 or tokens.ndim != 2:
        raise ValueError(f"want hidden (B,T,D), head (D,V), tokens (B,T); got {hidden.shape}, "
                         f"{head.shape}, {tokens.shape}")
    B, T, D = hidden.shape
    if tokens.shape != (B, T) or head.shape[0] != D:
        raise ValueError(f"shape mismatch: hidden {hidden.shape}, head {head.shape}, tokens {tokens.shape}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1 or None, got {chunk_size}")
    if T < 2:
        z = jnp.zeros((B, T), jnp.float32)
        return z, z
    dt = jnp.result_type(hidden.dtype, head.dtype)
    n = T - 1
    c = n if chunk_size is None else min(chunk_size, n)
    nc = -(-n // c)
    pad = nc * c - n
    h = jnp.pad(hidden[:, :-1].astype(dt), ((0, 0), (0, pad), (0, 0)))  # (B, nc*c, D)
    y = jnp.pad(tokens[:, 1:].astype(jnp.int32), ((0, 0), (0, pad)))     # (B, nc*c)
    h = h.reshape(B, nc, c, D).swapaxes(0, 1)                             # (nc, B, c, D)
    y = y.reshape(B, nc, c).swapaxes(0, 1)                                # (nc, B, c)
    w = head.astype(dt)

    dense = jax.checkpoint(lambda hc, yc: _chunk_logprobs(hc, w, yc, temperature, top_k, top_p))
    if mask is not None:
        if mask.shape != (B, T):
            raise ValueError(f"mask must be (B, T) = {(B, T)}, got {mask.shape}")
        m = jnp.pad(mask[:, 1:].astype(bool), ((0, 0), (0, pad)))           # aligned with y
        m = m.reshape(B, nc, c).swapaxes(0, 1)                            # (nc, B, c)

        def chunk_fn(hc, yc, mc):   # the chunk, or zeros when no row needs it
            zero = jnp.zeros(yc.shape, jnp.float32)
            return jax.lax.cond(jnp.any(mc), lambda: dense(hc, yc), lambda: (zero, zero))
        xs = (h, y, m)
    else:
        chunk_fn, xs = dense, (h, y)
    if nc == 1:
        lp, ent = chunk_fn(*(x[0] for x in xs))
        lp, ent = lp[None], ent[None]
    else:
        lp, ent = jax.lax.map(lambda a: chunk_fn(*a), xs)                 # (nc, B, c) each

    def unchunk(x):
        x = x.swapaxes(0, 1).reshape(B, nc * c)[:, :n]
        return jnp.pad(x, ((0, 0), (1, 0)))                               # (B, T), 0 at t=0
    return unchunk(lp), unchunk(ent)


def logprobs_from_logits(logits: jax.Array, tokens: jax.Array, temperature: float = 1.0) -> tuple[jax.Array, jax.Array]:
    """Unchunked reference on full logits (B, T, V) -> (logprobs, entropy) (B, T), same alignment.

    For tests and tiny vocabularies only.
    """
    x = logits.astype(jnp.float32)[:, :-1] / temperature
    logz = jax.nn.logsumexp(x, axis=-1)
    lpa = x - logz[..., None]
    ent = -jnp.sum(jnp.exp(lpa) * lpa, axis=-1)
    lp = jnp.take_along_axis(lpa, tokens[:, 1:, None].astype(jnp.int32), axis=-1)[..., 0]
    pad = lambda a: jnp.pad(a, ((0, 0), (1, 0)))  # noqa: E731
    return pad(lp), pad(ent)
