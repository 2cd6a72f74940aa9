"""Device mesh and logical-axis rules (one small object; see jax-llm-examples' ``ShardingRules``).

Every weight names its logical axes once (``skillax.models.params``); ``LogicalRules`` maps a
logical axis to a mesh axis (or None = replicated). The mesh has named axes
``("data", "fsdp", "tensor")``:

* ``data``   — pure data parallelism: batch split, parameters replicated.
* ``fsdp``   — batch split *and* parameters/optimiser state sharded over the ``embed`` axis
               (ZeRO-3 style; XLA all-gathers a layer's weights inside the scan).
* ``tensor`` — Megatron-style tensor parallelism over heads / MLP width / vocabulary.

Multi-host (TPU pods, multi-node GPU): ``skillax.distributed.initialize(cfg)`` runs before any
jax computation; meshes then span ``jax.devices()`` of all processes (process-major order, so
each process's devices hold a contiguous block of a batch's rows).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH_AXES = ("data", "fsdp", "tensor")
BATCH = ("data", "fsdp")  # mesh axes the batch dimension is split over


@dataclasses.dataclass(frozen=True)
class LogicalRules:
    """Logical axis name -> mesh axis (str, tuple of str, or None)."""

    rules: tuple[tuple[str, object], ...] = (
        ("batch", BATCH),
        ("layers", None),
        ("vocab", "tensor"),
        ("embed", "fsdp"),
        ("heads", "tensor"),   # fused (H * Dh) query/output projection axis
        ("kv", "tensor"),      # fused (KV * Dh) key/value projection axis
        ("mlp", "tensor"),
        ("head_dim", None),
        ("norm", None),
    )

    def mesh_axis(self, logical: str | None):
        if logical is None:
            return None
        for name, axis in self.rules:
            if name == logical:
                return axis
        raise KeyError(f"no sharding rule for logical axis {logical!r}")

    def spec(self, logical_axes: Sequence[str | None]) -> P:
        return P(*(self.mesh_axis(a) for a in logical_axes))


DEFAULT_RULES = LogicalRules()


def make_mesh(shape: Sequence[int] = (1, -1, 1), devices=None) -> Mesh:
    """A ``Mesh`` with axes ``("data", "fsdp", "tensor")``.

    Args:
      shape: sizes of (data, fsdp, tensor); one entry may be -1 (fills the rest).
      devices: defaults to ``jax.devices()``.
    Raises:
      ValueError: when the sizes do not multiply to the device count.
    """
    devices = list(jax.devices() if devices is None else devices)
    shape = list(shape)
    if len(shape) != 3:
        raise ValueError(f"mesh shape must have 3 entries (data, fsdp, tensor), got {shape}")
    if shape.count(-1) > 1:
        raise ValueError("at most one mesh axis may be -1")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = len(devices) // known
    if math.prod(shape) != len(devices):
        raise ValueError(f"mesh shape {tuple(shape)} needs {math.prod(shape)} devices, have {len(devices)}")
    return Mesh(np.asarray(devices).reshape(shape), MESH_AXES)


def logical_sharding(mesh: Mesh, logical_axes: Sequence[str | None],
                     rules: LogicalRules = DEFAULT_RULES) -> NamedSharding:
    return NamedSharding(mesh, rules.spec(logical_axes))


def batch_sharding(mesh: Mesh, ndim: int = 2) -> NamedSharding:
    """Sharding for a (B, ...) host batch: B split over data*fsdp, the rest replicated."""
    return NamedSharding(mesh, P(BATCH, *([None] * (ndim - 1))))


def constrain(x: jax.Array, logical_axes: Sequence[str | None], rules: LogicalRules = DEFAULT_RULES) -> jax.Array:
    """Pin an activation's sharding by logical axes when a mesh is set (``jax.set_mesh``, as
    the sharded train step does), else return ``x`` unchanged.

    Without these constraints XLA's propagation may shard activations along the weights'
    FSDP axis, and cuDNN attention's partitioner rejects q/k/v with different shardings.
    A dimension the mesh axes do not divide (or whose axes the mesh lacks) is left replicated.
    Shapes: any; ``len(logical_axes) == x.ndim``.
    """
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:
        return x
    spec = []
    for dim, name in zip(x.shape, logical_axes):
        axis = rules.mesh_axis(name)
        names = () if axis is None else (axis if isinstance(axis, tuple) else (axis,))
        names = tuple(n for n in names if n in mesh.axis_names)
        size = math.prod(mesh.shape[n] for n in names)
        spec.append(None if not names or dim % size else (names if len(names) > 1 else names[0]))
    return jax.lax.with_sharding_constraint(x, P(*spec))


def mesh_axis_size(name: str) -> int:
    """Size of mesh axis ``name`` of the mesh set by ``jax.set_mesh`` (1 without one)."""
    mesh = jax.sharding.get_abstract_mesh()
    return 1 if mesh.empty or name not in mesh.axis_names else int(mesh.shape[name])
