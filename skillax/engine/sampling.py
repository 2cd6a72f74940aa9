"""Logit processing and token sampling: temperature, top-k, top-p, and the logprob of the
distribution actually sampled from.

The policy's sampling distribution for one step is (the order of HF's logits processors and
of vLLM: temperature, then top-k, then top-p)::

    z      = logits / T                               (fp32)
    keep   = truncation_mask(z, top_k, top_p)         (top-k first, top-p on what remains)
    logp   = log_softmax(where(keep, z, -1e30))       (renormalised over the kept set)
    token  ~ Categorical(exp(logp))                   (Gumbel-max, ``jax.random.categorical``)

and the returned logprob is ``logp[token]``, so the trainer reproduces it by scoring the same
``z`` with the same kept set (PITFALLS 5-7). ``skillax.rl.logprobs.truncation_mask`` computes
the same kept set with a static ``top_k``; ``tests/engine/test_sampling.py`` checks the two
agree.

Greedy (``T == 0``): ``token = argmax(logits)`` and its logprob is taken under the *untempered,
untruncated* softmax ``log_softmax(logits)`` (temperature 1); top-k / top-p are ignored. The
trainer reproduces it with temperature 1 and no truncation.

All knobs are traced scalars (no recompilation when their values change). Which branch runs
-- greedy, plain sampling, or truncated sampling -- is static in the sampler's programs
(:func:`sampling_mode`; at most three programs per shape bucket); ``sample_tokens(mode="auto")``
instead picks it on device with ``lax.cond`` (``top_k == 0`` and ``top_p == 1`` switch
truncation off).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Sequence

import jax
import jax.numpy as jnp

#: logit of tokens outside the kept set (finite, so ``0 * NEG_LOGIT == 0``; same as rl.logprobs).
NEG_LOGIT = -1e30


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


@dataclasses.dataclass(frozen=True)
class SamplingParams:
    """Per-call sampling knobs (validated here, before anything is compiled).

    Attributes:
      temperature: >= 0; 0 means greedy (see module docstring for its logprob).
      top_k: keep the k most likely tokens (ties at the boundary kept); 0 = off.
      top_p: nucleus mass in (0, 1]; 1 = off.
      max_new_tokens: > 0; completions stop with reason "length" when they reach it.
      n: samples per prompt (GRPO group size G); rows are prompt-major (row = i * n + g).
      stop_strings: strings that end a completion (reason "stop"); need a tokenizer.
      stop_token_ids: token ids that end a completion (reason "stop").
      eos_ids: token ids that end a completion (reason "eos"); None = the sampler's default
        (model config + tokenizer EOS + ``<|im_end|>`` / ``<|endoftext|>`` when present).
      pad_id: written after a completion ends (never read back as a stop signal); None =
        the first EOS id, else 0.
    Raises:
      ValueError: on any out-of-range value.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    max_new_tokens: int = 256
    n: int = 1
    stop_strings: Sequence[str] = ()
    stop_token_ids: Sequence[int] = ()
    eos_ids: Sequence[int] | None = None
    pad_id: int | None = None

    def __post_init__(self):
        t = self.temperature
        if not isinstance(t, numbers.Real) or not math.isfinite(t) or t < 0:
            raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {t!r}")
        if not _is_int(self.top_k) or self.top_k < 0:
            raise ValueError(f"top_k must be an int >= 0 (0 = off), got {self.top_k!r}")
        p = self.top_p
        if not isinstance(p, numbers.Real) or not (0.0 < p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1] (1 = off), got {p!r}")
        if not _is_int(self.max_new_tokens) or self.max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens must be a positive int, got {self.max_new_tokens!r}")
        if not _is_int(self.n) or self.n <= 0:
            raise ValueError(f"n (samples per prompt) must be a positive int, got {self.n!r}")
        if isinstance(self.stop_strings, str):
            raise ValueError("stop_strings must be a list of strings, not one string")
        for s in self.stop_strings:
            if not isinstance(s, str) or not s:
                raise ValueError(f"stop_strings must be non-empty strings, got {s!r}")
        for name in ("stop_token_ids", "eos_ids"):
            ids = getattr(self, name) or ()
            for i in ids:
                if not _is_int(i) or i < 0:
                    raise ValueError(f"{name} must be non-negative ints, got {i!r}")
        if self.pad_id is not None and (not _is_int(self.pad_id) or self.pad_id < 0):
            raise ValueError(f"pad_id must be a non-negative int or None, got {self.pad_id!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def _mask_from_sorted(z, zs, order, top_k, top_p):
    """Kept set given the first M' entries of the descending sort of z (values zs, ids order)."""
    V, M = z.shape[-1], zs.shape[-1]
    k = jnp.clip(jnp.where(top_k > 0, top_k, V), 1, M)
    kth = jax.lax.dynamic_index_in_dim(zs, k - 1, axis=-1, keepdims=True)  # (B, 1)
    keep = (z >= kth) | (top_k <= 0)
    p = jax.nn.softmax(jnp.where(keep, z, NEG_LOGIT), axis=-1)  # (B, V)
    ps = jnp.take_along_axis(p, order, axis=-1)  # the same values, non-increasing
    kept_sorted = (jnp.cumsum(ps, axis=-1) - ps) < top_p
    threshold = jnp.min(jnp.where(kept_sorted, ps, jnp.inf), axis=-1, keepdims=True)
    return keep & ((p >= threshold) | (top_p >= 1.0)), ps


def truncation_mask(z: jax.Array, top_k: jax.Array, top_p: jax.Array, *, cap: int = 1024
                    ) -> jax.Array:
    """Kept set of top-k then top-p truncation, with traced ``top_k`` / ``top_p``.

    Args:
      z: (B, V) fp32 logits, temperature already applied.
      top_k: () int32; keep tokens with ``z >= `` the k-th largest (ties kept); 0 = off.
      top_p: () fp32 in (0, 1]; of what top-k kept, keep tokens whose probability is >= the
        smallest probability in the shortest descending prefix whose mass *before* each
        member is < top_p (the top token is always kept; ties at the threshold kept).
        Matches HF ``TopPLogitsWarper`` (remove where ascending cumsum <= 1 - top_p) up to ties.
      cap: static M; when top_k <= M and the M most likely tokens hold >= top_p of the mass
        in every row (the usual case for a trained LM), the kept set comes from
        ``lax.top_k(z, M)`` (~5 ms on 2 CPU cores for 8 x 49152, M = 1024) instead of a full
        sort (~130 ms); otherwise (flat distributions, e.g. random weights) from the full
        sort. Both paths give the identical set: the first M sorted values are the same.
    Returns:
      (B, V) bool.
    Source: identical definition to ``skillax.rl.logprobs.truncation_mask`` (static top_k).
    """
    V = z.shape[-1]
    M = min(cap, V)
    zs, order = jax.lax.top_k(z, M)  # (B, M) descending
    keep, ps = _mask_from_sorted(z, zs, order, top_k, top_p)
    # exact iff the k-th value and the whole top-p prefix lie within the top M
    fast_ok = (top_k <= M) & ((top_p >= 1.0) | jnp.all(jnp.sum(ps, axis=-1) >= top_p))

    def full(_):
        order = jnp.argsort(-z, axis=-1)
        return _mask_from_sorted(z, jnp.take_along_axis(z, order, axis=-1), order, top_k, top_p)[0]

    return jax.lax.cond(fast_ok, lambda _: keep, full, None)


MODES = ("greedy", "sample", "truncate")


def sampling_mode(sp: SamplingParams) -> str:
    """The static sampling branch of ``sp``: "greedy" (temperature 0), "truncate" (top-k or
    top-p on) or "sample" (plain temperature sampling). Programs traced with a fixed mode
    carry no ``lax.cond`` (on GPU each one syncs the host once per decode step)."""
    if sp.greedy:
        return "greedy"
    return "truncate" if (sp.top_k > 0 or sp.top_p < 1.0) else "sample"


def sampling_logprobs(logits: jax.Array, temperature: jax.Array, top_k: jax.Array,
                      top_p: jax.Array, truncate: bool | None = None) -> jax.Array:
    """Log-probabilities of the distribution sampled from, for ``temperature > 0``.

    Args:
      logits: (B, V) fp32 raw logits.
      temperature: () fp32 > 0.
      top_k: () int32 (0 = off). top_p: () fp32 in (0, 1] (1 = off).
      truncate: static: True applies the truncation mask (a no-op when both knobs are off,
        at the cost of a top-k), False skips it (the caller guarantees both are off), None
        decides on device with a ``lax.cond``.
    Returns:
      (B, V) fp32 ``log_softmax(where(keep, logits / T, NEG_LOGIT))``.
    """
    z = logits.astype(jnp.float32) / temperature
    apply = lambda z: jnp.where(truncation_mask(z, top_k, top_p), z, NEG_LOGIT)
    if truncate is None:
        z = jax.lax.cond((top_k > 0) | (top_p < 1.0), apply, lambda z: z, z)
    elif truncate:
        z = apply(z)
    return jax.nn.log_softmax(z, axis=-1)


def sample_tokens(keys: jax.Array, logits: jax.Array, temperature: jax.Array,
                  top_k: jax.Array, top_p: jax.Array, mode: str = "auto"
                  ) -> tuple[jax.Array, jax.Array]:
    """Draw one token per row and return its logprob under the distribution used.

    Args:
      keys: (B,) typed PRNG keys, one per row.
      logits: (B, V) fp32.
      temperature: () fp32 >= 0 (0 = greedy). top_k: () int32. top_p: () fp32.
      mode: static branch from :func:`sampling_mode` ("greedy" | "sample" | "truncate"; the
        caller guarantees the knobs agree with it), or "auto": chosen on device by
        ``lax.cond`` from the traced knobs (one program for every setting).
    Returns:
      tokens (B,) int32, logprobs (B,) fp32. Greedy: argmax and its temperature-1 full-softmax
      logprob (module docstring).
    Raises:
      ValueError: unknown ``mode``.
    """
    if mode not in MODES + ("auto",):
        raise ValueError(f"mode must be one of {MODES + ('auto',)}, got {mode!r}")
    logits = logits.astype(jnp.float32)

    def greedy(_):
        tok = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        lp = jax.nn.log_softmax(logits, axis=-1)
        return tok, jnp.take_along_axis(lp, tok[:, None], axis=-1)[:, 0]

    def sample(_):
        truncate = None if mode == "auto" else mode == "truncate"
        lp = sampling_logprobs(logits, jnp.maximum(temperature, 1e-6), top_k, top_p, truncate)
        tok = jax.vmap(jax.random.categorical)(keys, lp).astype(jnp.int32)
        return tok, jnp.take_along_axis(lp, tok[:, None], axis=-1)[:, 0]

    if mode == "auto":
        return jax.lax.cond(temperature > 0, sample, greedy, None)
    return greedy(None) if mode == "greedy" else sample(None)


def token_logprobs(logits: jax.Array, tokens: jax.Array, temperature: float, top_k: int = 0,
                   top_p: float = 1.0) -> jax.Array:
    """Teacher-forced logprobs of given tokens under the sampler's distribution.

    For checking or re-scoring a rollout outside the trainer (the trainer's chunked path is
    ``skillax.rl.logprobs``). logits (..., V) fp32, tokens (...) int -> (...) fp32.
    ``temperature == 0`` scores greedy samples: temperature 1, no truncation.
    """
    shape = tokens.shape
    lg = logits.reshape(-1, logits.shape[-1]).astype(jnp.float32)
    if temperature == 0:
        lp = jax.nn.log_softmax(lg, axis=-1)
    else:
        lp = sampling_logprobs(lg, jnp.float32(temperature), jnp.int32(top_k), jnp.float32(top_p))
    out = jnp.take_along_axis(lp, tokens.reshape(-1, 1).astype(jnp.int32), axis=-1)[:, 0]
    return out.reshape(shape)
