"""Weight hand-off from the trainer's sharding to the sampler's, without a full gather.

By default there is nothing to do: ``Sampler.generate`` takes the trainer's ``params`` as an
argument and jit uses them where they are (no copy). When the sampler wants another layout
(e.g. tensor-parallel decode while the trainer is FSDP), ``reshard_params`` moves the tree
leaf by leaf, and leaves larger than ``chunk_bytes`` in slices of their leading (layer) axis
written into a preallocated, donated destination. Each step is waited for before the next,
so the transient memory beyond the two trees is one chunk (PITFALLS 18), and no step ever
materialises a whole leaf on one device unless the destination sharding says so.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, static_argnames=("axis",), donate_argnums=(0,))
def _write(dst, piece, start, *, axis=0):
    return jax.lax.dynamic_update_slice_in_dim(dst, piece.astype(dst.dtype), start, axis)


def _zeros(shape, dtype, sharding):
    return jax.jit(lambda: jnp.zeros(shape, dtype), out_shardings=sharding)()


def reshard_leaf(x: jax.Array, sharding, chunk_bytes: int = 1 << 28) -> jax.Array:
    """``x`` with ``sharding``; ``x`` itself when it already has it (no copy).

    Leaves over ``chunk_bytes`` with a leading axis > 1 move in slices along axis 0.
    """
    have = getattr(x, "sharding", None)
    if have is not None and (have == sharding or have.is_equivalent_to(sharding, x.ndim)):
        return x
    if x.nbytes <= chunk_bytes or x.ndim == 0 or x.shape[0] == 1:
        return jax.block_until_ready(jax.device_put(x, sharding))
    per_row = x.nbytes // x.shape[0]
    rows = max(1, chunk_bytes // max(per_row, 1))
    dst = _zeros(x.shape, x.dtype, sharding)
    for start in range(0, x.shape[0], rows):
        piece = jax.lax.slice_in_dim(x, start, min(start + rows, x.shape[0]), axis=0)
        dst = jax.block_until_ready(_write(dst, piece, start))
    return dst


def reshard_params(params, shardings, chunk_bytes: int = 1 << 28):
    """Move a params tree to ``shardings`` (a matching tree of ``jax.sharding.Sharding``).

    Args:
      params: pytree of jax.Array (the trainer's copy is left untouched).
      shardings: same structure, e.g. ``skillax.models.params.param_shardings(cfg, mesh)``.
      chunk_bytes: largest piece moved at once.
    Returns:
      the resharded tree (leaves already in place are returned as is).
    Raises:
      ValueError: the two trees differ in structure.
    """
    p_leaves, p_def = jax.tree.flatten(params)
    s_leaves, s_def = jax.tree.flatten(shardings, is_leaf=lambda s: isinstance(s, jax.sharding.Sharding))
    if p_def != s_def:
        raise ValueError(f"params and shardings trees differ:\n{p_def}\nvs\n{s_def}")
    return jax.tree.unflatten(p_def, [reshard_leaf(x, s, chunk_bytes) for x, s in zip(p_leaves, s_leaves)])
