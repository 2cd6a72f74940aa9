"""Loss aggregation modes as (sum, denominator) pairs.

Every mode splits the batch loss into ``numerator(per_token_loss, mask)`` -- a sum over rows
that is additive across micro-batches -- and ``denominator(mask)`` -- which depends on the
masks only, never on parameters. The loss is ``sum / denominator``; with micro-batches it is
``(sum_1 + sum_2 + ...) / (den_1 + den_2 + ...)``, identical to one big batch in every mode
(tunix's convention). The train step computes the denominators of the *whole* batch before
the micro-batch scan, so gradients of the micro-batch numerators simply add up.

Modes (PITFALLS 13 toy batch: row A has 1 token with loss 1, row B 9 tokens with loss 0):

==========================  ==========================================  ============  =======
mode                        loss                                         denominator   toy
==========================  ==========================================  ============  =======
``token_mean``              sum_bt l m / sum_bt m                        # tokens      0.1
``seq_mean_token_mean``     mean_b (sum_t l m / sum_t m)                 # rows        0.5
``seq_mean_token_sum``      mean_b sum_t l m  (REINFORCE per sequence)   # rows        0.5
``seq_mean_token_sum_norm`` sum_bt l m / (B * L_max)  (Dr.GRPO Eq. 3)    # rows*L_max  1/18
==========================  ==========================================  ============  =======

"# rows" counts only rows with at least one mask token: a row with an empty mask (padding
row, overlong-filtered completion, a dropped zero-variance group) contributes nothing and is
not counted. An all-empty batch gives ``0 / 0``; :func:`safe_ratio` turns that into 0.
L_max is a config constant (Dr.GRPO: the generation budget), not the batch's longest row.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

MODES = ("token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "seq_mean_token_sum_norm")


def check_mode(mode: str, max_len: int | None = None) -> None:
    """Raise ValueError for an unknown mode or a missing / bad ``max_len`` for Dr.GRPO."""
    if mode not in MODES:
        raise ValueError(f"unknown aggregation mode {mode!r}; choose one of {MODES}")
    if mode == "seq_mean_token_sum_norm" and (max_len is None or max_len < 1):
        raise ValueError(f"mode {mode!r} needs a positive max_len (L_max), got {max_len}")


def numerator(per_token_loss: jax.Array, mask: jax.Array, mode: str) -> jax.Array:
    """Additive numerator. per_token_loss, mask: (B, T) (mask 0/1 any dtype) -> () fp32.

    ``where`` (not multiply) keeps NaN/inf in masked-out positions from leaking.
    """
    check_mode(mode, 1)
    m = mask.astype(bool)
    lm = jnp.where(m, per_token_loss.astype(jnp.float32), 0.0)
    if mode == "seq_mean_token_mean":
        n = jnp.sum(m, axis=-1)
        return jnp.sum(jnp.sum(lm, axis=-1) / jnp.maximum(n, 1))
    return jnp.sum(lm)


def denominator(mask: jax.Array, mode: str, max_len: int | None = None) -> jax.Array:
    """Denominator from the mask alone. mask (B, T) -> () fp32 (see the module table)."""
    check_mode(mode, max_len)
    m = mask.astype(bool)
    if mode == "token_mean":
        return jnp.sum(m).astype(jnp.float32)
    rows = jnp.sum(jnp.any(m, axis=-1)).astype(jnp.float32)
    if mode == "seq_mean_token_sum_norm":
        return rows * float(max_len)
    return rows


def aggregate(per_token_loss: jax.Array, mask: jax.Array, mode: str,
              max_len: int | None = None) -> tuple[jax.Array, jax.Array]:
    """(sum, denominator) of a per-token loss (B, T) under ``mode``; both () fp32."""
    return numerator(per_token_loss, mask, mode), denominator(mask, mode, max_len)


def safe_ratio(num: jax.Array, den: jax.Array) -> jax.Array:
    """num / den, with 0 where den == 0 (an objective with no tokens contributes nothing)."""
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
