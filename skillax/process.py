"""Which process of a multi-process run this is, without importing jax (issue 21).

``skillax.distributed.initialize`` records the index and count here once the JAX distributed
runtime is up; a single-process run keeps the defaults (index 0 of 1). Host-side code that
writes run outputs (metrics, plots, exported skills, ``config.json``) asks :func:`is_writer`
so only process 0 writes them; ``skills/`` and ``agents/`` can ask too (no jax import).
"""

from __future__ import annotations

_INDEX = 0
_COUNT = 1


def set_process(index: int, count: int) -> None:
    """Record this process's index in ``[0, count)`` (called by ``distributed.initialize``)."""
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"process index {index} must be in [0, {count})")
    global _INDEX, _COUNT
    _INDEX, _COUNT = int(index), int(count)


def index() -> int:
    return _INDEX


def count() -> int:
    return _COUNT


def is_writer() -> bool:
    """True on the process that writes a run's outputs: process 0 (always, single-process)."""
    return _INDEX == 0
