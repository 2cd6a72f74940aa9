"""Device memory of this process, for the RL loops' step metrics (ours).

Learning campaigns share one GPU between arms, each preallocating a fraction of it
(``XLA_PYTHON_CLIENT_MEM_FRACTION``, ``benchmarks/device/learning.sh``), so ``nvidia-smi`` shows
the fractions, not what an arm needs. The allocator's peak does: with it logged per step, an
arm's share can be sized from a run (a Qwen2.5-0.5B RL arm was given 0.30 of an H200, 43 GB,
from SmolLM2-era plans; whether three arms fit on an H100 depends on the true peak).
"""

from __future__ import annotations

from typing import Sequence

GIB = float(2 ** 30)


def peak_memory_metrics(devices: Sequence | None = None) -> dict:
    """``{"memory/peak_gb": ..., "memory/limit_gb": ...}`` over this process's devices.

    memory/peak_gb: the largest ``memory_stats()["peak_bytes_in_use"]`` among ``devices``
      (default ``jax.local_devices()``), in GiB (2^30 bytes): the allocator's high-water mark
      since the process started (XLA does not reset it), so per step it is non-decreasing.
    memory/limit_gb: the largest ``bytes_limit`` (what the allocator may use: the preallocated
      fraction), in GiB, where reported.
    Returns {} where no device reports memory statistics (CPU: ``memory_stats()`` is None).
    """
    if devices is None:
        import jax
        devices = jax.local_devices()
    stats = [s for s in ((d.memory_stats() or {}) for d in devices) if "peak_bytes_in_use" in s]
    if not stats:
        return {}
    out = {"memory/peak_gb": max(int(s["peak_bytes_in_use"]) for s in stats) / GIB}
    limits = [int(s["bytes_limit"]) for s in stats if "bytes_limit" in s]
    if limits:
        out["memory/limit_gb"] = max(limits) / GIB
    return out
