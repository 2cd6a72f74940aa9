"""Preallocated KV cache for batched decoding (a pytree; donate it into the decode step).

Slots are shared by all rows: a chunk of T new tokens (prefill, a decode step, or a ragged
multi-turn append left-padded inside the chunk) is written at slots ``index .. index+T-1`` and
``slot_valid`` marks which written slots hold real tokens. A query at slot i attends slots
j <= i with ``slot_valid[b, j]``. RoPE positions are per row and independent of slots.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from skillax.models.config import ModelConfig


class KVCache(NamedTuple):
    k: jax.Array           # (L, B, S, KV, Dh) compute dtype
    v: jax.Array           # (L, B, S, KV, Dh) compute dtype
    slot_valid: jax.Array  # (B, S) bool
    index: jax.Array       # () int32, next free slot

    @property
    def max_len(self) -> int:
        return self.k.shape[2]


def init_cache(cfg: ModelConfig, batch: int, max_len: int, dtype=jnp.bfloat16) -> KVCache:
    """Zeroed cache for ``batch`` rows and ``max_len`` slots."""
    shape = (cfg.num_layers, batch, max_len, cfg.num_kv_heads, cfg.head_dim)
    return KVCache(
        k=jnp.zeros(shape, dtype),
        v=jnp.zeros(shape, dtype),
        slot_valid=jnp.zeros((batch, max_len), bool),
        index=jnp.zeros((), jnp.int32),
    )


def cache_bytes(cfg: ModelConfig, batch: int, max_len: int, dtype=jnp.bfloat16) -> int:
    return 2 * cfg.num_layers * batch * max_len * cfg.num_kv_heads * cfg.head_dim * jnp.dtype(dtype).itemsize
