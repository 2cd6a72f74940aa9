"""Host-side collectives between the processes of a multi-process run (issue 21).

The method loops keep their host state (skill library, task stream, episodes, training rows)
as plain Python/numpy; with several processes they exchange it with these few calls, built on
``jax.experimental.multihost_utils.process_allgather`` (the JAX distributed runtime's
collectives: gloo on CPU, NCCL / ICI on GPU / TPU). Every call is a collective: **every
process must make the same calls in the same order**. The arrays exchanged have shapes every
process knows in advance (a fixed-size length or digest first, then payloads padded to the
longest), so processes that disagree get a :class:`~skillax.distributed.DistributedError` on
every process instead of a hang.

With one process every function is a local no-op (nothing imports jax's distributed runtime).
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any, Sequence

import numpy as np

from skillax import process


def _allgather(x: np.ndarray) -> np.ndarray:
    """(P, *x.shape): every process's ``x`` in process order (same shape and dtype on all)."""
    from jax.experimental import multihost_utils

    from skillax.distributed import lost_peer

    try:
        return np.asarray(multihost_utils.process_allgather(np.asarray(x), tiled=False))
    except Exception as e:   # noqa: BLE001 -- the runtime's error types differ per backend
        raise lost_peer(e, "an all-gather") from e


def allgather_bytes(data: bytes) -> list[bytes]:
    """Every process's ``data`` (any length), in process order; ``[data]`` with one process.

    Two collectives: the lengths ((P,) int64), then the payloads as uint8 padded to the
    longest ((P, max_len))."""
    if process.count() == 1:
        return [bytes(data)]
    lengths = _allgather(np.array([len(data)], np.int64))[:, 0]                 # (P,)
    buf = np.zeros((max(int(lengths.max()), 1),), np.uint8)
    buf[:len(data)] = np.frombuffer(bytes(data), np.uint8)
    every = _allgather(buf)                                                      # (P, max_len) uint8
    return [every[p, :int(n)].tobytes() for p, n in enumerate(lengths)]


def allgather_objects(obj: Any) -> list[Any]:
    """Every process's picklable ``obj``, in process order (``[obj]`` with one process).

    Pickle is safe here: the peers are processes of the same run, started from the same code
    with the same config (``distributed.check_same_config``)."""
    if process.count() == 1:
        return [obj]
    return [pickle.loads(b) for b in allgather_bytes(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))]


def first_reason(reason: str | None) -> str | None:
    """The first non-empty stop reason over the processes, in process order (``reason`` itself
    with one process): every process stops a loop at the same step (``RLClock.stop_reason``
    differs between hosts by their wall clocks)."""
    return next((r for r in allgather_objects(reason) if r), None)


def digest(data: bytes | str) -> bytes:
    """sha256 of ``data`` (32 bytes; str as UTF-8)."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else bytes(data)).digest()


def agree(what: str, data: bytes | str) -> None:
    """Check that every process holds the same ``data`` (compared by :func:`digest`, one
    (P, 32) uint8 all-gather). Raises DistributedError on **every** process when they differ,
    naming ``what`` and which processes hold which digest prefix."""
    if process.count() == 1:
        return
    from skillax.distributed import DistributedError

    every = _allgather(np.frombuffer(digest(data), np.uint8))                    # (P, 32)
    prefixes = [row.tobytes().hex()[:12] for row in every]
    if len(set(prefixes)) > 1:
        listing = ", ".join(f"process {i}: {d}" for i, d in enumerate(prefixes))
        raise DistributedError(
            f"the processes disagree on {what} ({listing}; sha256 prefixes). Their host state diverged: "
            "every process must apply the same updates to the same data (issue 21, one truth for the "
            "host state); nothing was trained on the mismatched data.")


def share(n: int, index: int | None = None, count: int | None = None) -> tuple[int, int]:
    """``[lo, hi)``: the contiguous block of ``n`` items (tasks, episodes) that process ``index``
    of ``count`` runs (default: this process). Blocks are in process order and differ in size
    by at most one (the first ``n % count`` processes take one more); a process may get none
    when ``n < count``. Concatenating every process's block in process order gives 0..n-1."""
    index = process.index() if index is None else int(index)
    count = process.count() if count is None else int(count)
    if n < 0 or count < 1 or not 0 <= index < count:
        raise ValueError(f"share({n}, index={index}, count={count}): need n >= 0 and 0 <= index < count")
    base, extra = divmod(int(n), count)
    lo = index * base + min(index, extra)
    return lo, lo + base + (index < extra)


def concat(parts: Sequence[Sequence[Any]]) -> list[Any]:
    """The per-process lists of :func:`allgather_objects`, joined in process order."""
    return [x for part in parts for x in part]


def barrier(name: str) -> None:
    """Wait until every process reaches the barrier ``name`` (no-op with one process)."""
    if process.count() == 1:
        return
    from jax.experimental import multihost_utils

    from skillax.distributed import lost_peer

    try:
        multihost_utils.sync_global_devices(name)
    except Exception as e:   # noqa: BLE001
        raise lost_peer(e, f"the barrier {name!r}") from e
