"""Per-token policy losses: PPO clip (clip-higher, dual clip), REINFORCE, entropy bonus.

All functions here are per token: (B, T) in, (B, T) out. Aggregation into a
(sum, denominator) pair is :mod:`skillax.rl.aggregation`; the weighted combination of
objectives is :mod:`skillax.rl.objectives`. Advantages may be per sequence (B,) -- broadcast
over the tokens of the row -- or per token (B, T).

Sign convention: these are *losses* (minimised); maximising ``A * ratio`` means the loss is
``-A * ratio``.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp


def broadcast_advantages(adv: jax.Array, shape: tuple[int, int]) -> jax.Array:
    """(B,) or (B, T) advantages -> (B, T) fp32; ValueError on any other shape."""
    adv = jnp.asarray(adv, jnp.float32)
    if adv.shape == shape:
        return adv
    if adv.shape == shape[:1]:
        return jnp.broadcast_to(adv[:, None], shape)
    raise ValueError(f"advantages must have shape {shape[:1]} or {shape}, got {adv.shape}")


def importance_ratio(logp: jax.Array, old_logp: jax.Array, log_ratio_clamp: float = 20.0):
    """``ratio = exp(clip(logp - old_logp, -c, c))`` -> (ratio, clamped log ratio), (B, T) fp32."""
    log_ratio = jnp.clip(logp.astype(jnp.float32) - old_logp.astype(jnp.float32),
                         -log_ratio_clamp, log_ratio_clamp)
    return jnp.exp(log_ratio), log_ratio


def ppo_clip_loss(
    logp: jax.Array,
    old_logp: jax.Array,
    advantages: jax.Array,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    dual_clip: float | None = None,
    log_ratio_clamp: float = 20.0,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """PPO clipped surrogate per token.

    ``l = -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A)``; with dual clip ``c > 1`` and
    ``A < 0`` the loss is further capped at ``-c A`` (Ye et al. 2020, "Mastering Complex Control
    in MOBA Games", Eq. 5; verl ``compute_policy_loss``). ``eps_high > eps_low`` is DAPO's
    clip-higher (Yu et al. 2025, Eq. 10).

    Args:
      logp, old_logp: (B, T) fp32 current / behaviour logprobs of the taken tokens.
      advantages: (B,) or (B, T).
    Returns:
      loss (B, T) fp32 and per-token stats (B, T): ``ratio``, ``clipped`` (1.0 where the
      clipped branch is the active one, verl's ``pg_clipfrac``) and ``dual_clipped``.
    Raises:
      ValueError: eps out of range, dual_clip <= 1, bad advantage shape.
    Source: PPO (Schulman et al. 2017, Eq. 7); GRPO (Shao et al. 2024, Eq. 3).
    """
    if not (0.0 <= eps_low < 1.0 and eps_high >= 0.0):
        raise ValueError(f"need 0 <= eps_low < 1 and eps_high >= 0, got {eps_low}, {eps_high}")
    if dual_clip is not None and not dual_clip > 1.0:
        raise ValueError(f"dual_clip must be > 1 (or None), got {dual_clip}")
    adv = broadcast_advantages(advantages, logp.shape)
    ratio, _ = importance_ratio(logp, old_logp, log_ratio_clamp)
    loss1 = -adv * ratio
    loss2 = -adv * jnp.clip(ratio, 1.0 - eps_low, 1.0 + eps_high)
    loss = jnp.maximum(loss1, loss2)
    clipped = (loss2 > loss1).astype(jnp.float32)
    dual = jnp.zeros_like(loss)
    if dual_clip is not None:
        loss3 = -adv * dual_clip
        dual = ((loss > loss3) & (adv < 0)).astype(jnp.float32)
        loss = jnp.where(adv < 0, jnp.minimum(loss, loss3), loss)
    return loss, {"ratio": ratio, "clipped": clipped, "dual_clipped": dual}


def reinforce_loss(logp: jax.Array, advantages: jax.Array, baseline: jax.Array | float = 0.0) -> jax.Array:
    """REINFORCE per token: ``-(A - b) * logp`` (B, T) fp32 (Williams 1992).

    Summed over a sequence's tokens (aggregation ``seq_mean_token_sum``) this is
    ``-(A - b) log pi(y | x)`` -- Skill1's rerank objective on the raw NDCG reward
    (Sec. 3.4). On-policy only: there is no importance ratio, so use it for the first (and
    only) update on a batch. ``baseline`` is a scalar, (B,) or (B, T); it must not depend on
    the parameters.
    """
    adv = broadcast_advantages(advantages, logp.shape)
    b = jnp.asarray(baseline, jnp.float32)
    if b.ndim == 1:
        b = b[:, None]  # (B,) -> (B, 1)
    return -(adv - jax.lax.stop_gradient(b)) * logp.astype(jnp.float32)


def entropy_bonus(entropy: jax.Array, coef: float = 0.001) -> jax.Array:
    """Per-token loss term ``-coef * H`` (maximising entropy); default coef 0.001 (Skill-alpha)."""
    return -coef * entropy.astype(jnp.float32)
