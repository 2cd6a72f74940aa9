"""One host batch for all processes before a collective train step (issue 21).

``PolicyEngine.train`` / ``.sft`` hand the jitted step a global batch split over the mesh's
("data", "fsdp") axes. With several processes every process must run the *same* sequence of
compiled programs (same padded lengths, the same number of rows, micro-batches, mini-batches
and length buckets), or the collectives inside them would wait for each other forever. The
rule here: before any device work every process holds the **same whole host batch** (then the
host-side layout code -- ``rl.minibatch`` -- makes the same choices everywhere, and each process
places only the rows its devices hold, ``train_step.shard_batch(..., local_rows=False)``):

* ``scope="global"``: the caller already built the same batch on every process (the methods
  gather their episodes and build the batch from all of them); :func:`check_same` compares a
  digest of it -- a mismatch is a DistributedError on every process, never a hang.
* ``scope="local"``: each process passes **its own rows** (any row count and padded length,
  the ``rl.objectives`` format); :func:`gather_local` all-gathers them and
  :func:`merge_local_batches` joins the real rows in process order, re-padded to the bucket
  of the longest row and to a multiple of ``rows_multiple`` rows.

With one process both are the identity (the batch as given).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from skillax import collectives, process
from skillax.rl import minibatch as mb_lib

SCOPES = ("global", "local")


def _leaves(batch: Mapping, prefix: str = ""):
    """(path, value) of every leaf, sorted by path (nested dicts flattened with '/')."""
    for k in sorted(batch):
        v = batch[k]
        if isinstance(v, Mapping):
            yield from _leaves(v, f"{prefix}{k}/")
        else:
            yield f"{prefix}{k}", v


def batch_bytes(batch: Mapping) -> bytes:
    """A canonical byte string of a host batch: each leaf's path, dtype, shape and bytes."""
    out = []
    for path, v in _leaves(batch):
        a = np.ascontiguousarray(np.asarray(v))
        out += [path.encode(), b"|", str(a.dtype).encode(), b"|", repr(a.shape).encode(), b"|", a.tobytes(), b";"]
    return b"".join(out)


def check_same(batch: Mapping, what: str = "the training batch") -> None:
    """DistributedError on every process unless all hold the same ``batch`` (one digest
    all-gather; no-op with one process)."""
    collectives.agree(what, batch_bytes(batch))


def merge_local_batches(batches: Sequence[Mapping], *, rows_multiple: int, length_buckets: Sequence[int],
                        pad_id: int = 0) -> dict:
    """Join per-process batches (process order) into one global host batch.

    Args:
      batches: P batches of the ``methods.common.rows.build_batch`` format: (B_p, T_p) leaves
        ``tokens`` / ``positions`` / ``valid`` / ``old_logprobs`` (+ optional ``ref_logprobs``),
        ``objectives/{name}/{loss_mask (B_p, T_p), advantages (B_p,)}``, host keys ``num_rows``
        (real rows, default B_p), ``dropped_truncated``, ``episodes`` (B_p,) int32 (-1 on
        padding rows). Every batch must have the same keys and objectives.
      rows_multiple: the merged row count B is padded up to a multiple of it (``train.micro_batch``).
      length_buckets: the merged T is the bucket of the longest real row (``rl.minibatch.bucket_of``).
      pad_id: token id of padding positions.
    Returns:
      one batch of the same format: the real rows of batch 0, then of batch 1, ...; padding
      rows all-invalid with zero masks/advantages/logprobs, ``episodes`` -1, positions 0..T-1.
      Episode ids of batch p are shifted by the number of episode ids used before it
      (max id + 1 of each earlier batch), so an episode's rows stay one episode.
      ``num_rows`` = sum of real rows, ``dropped_truncated`` summed.
    Raises:
      ValueError: no batches, different keys/objectives, a row longer than the largest
        bucket, or a non-positive ``rows_multiple``.
    """
    if not batches:
        raise ValueError("merge_local_batches needs at least one batch")
    if rows_multiple < 1:
        raise ValueError(f"rows_multiple must be >= 1, got {rows_multiple}")
    keys = [sorted(k for k in b if k not in mb_lib.HOST_KEYS) for b in batches]
    objs = [sorted(b["objectives"]) for b in batches]
    if any(k != keys[0] for k in keys) or any(o != objs[0] for o in objs):
        raise ValueError(f"the processes' batches have different keys {keys} / objectives {objs}")
    idx_parts, ep_parts, offset = [], [], 0
    for p, b in enumerate(batches):
        B = int(np.shape(b["tokens"])[0])
        n = int(b.get("num_rows", B))
        eps = np.asarray(b["episodes"], np.int64)[:n] if "episodes" in b else np.arange(n, dtype=np.int64)
        ep_parts.append(np.where(eps >= 0, eps + offset, -1))
        offset += int(eps.max()) + 1 if eps.size else 0
        idx_parts.append(np.arange(n, dtype=np.int64))
    n_total = sum(i.size for i in idx_parts)
    lengths = [mb_lib.row_lengths(b["valid"])[:i.size] for b, i in zip(batches, idx_parts)]
    longest = max((int(x.max()) for x in lengths if x.size), default=1)
    T = mb_lib.bucket_of(max(longest, 1), length_buckets)
    B_out = max(-(-n_total // rows_multiple) * rows_multiple, rows_multiple)

    def join(get):
        rows = [get(b)[i] for b, i in zip(batches, idx_parts)]
        a0 = np.asarray(get(batches[0]))
        out = np.zeros((B_out,) + ((T,) if a0.ndim == 2 else a0.shape[1:]), a0.dtype)
        r = 0
        for x in rows:
            x = np.asarray(x)
            if x.ndim == 2:
                w = min(x.shape[1], T)
                out[r:r + len(x), :w] = x[:, :w]
            else:
                out[r:r + len(x)] = x
            r += len(x)
        return out

    merged: dict = {}
    for key in keys[0]:
        if key == "objectives":
            merged[key] = {o: {k: join(lambda b, o=o, k=k: np.asarray(b["objectives"][o][k]))
                               for k in sorted(batches[0]["objectives"][o])} for o in objs[0]}
        else:
            merged[key] = join(lambda b, key=key: np.asarray(b[key]))
    if "tokens" in merged:
        merged["tokens"][~merged["valid"]] = pad_id
    if "positions" in merged:
        merged["positions"][:] = np.arange(T, dtype=merged["positions"].dtype)
    episodes = np.full((B_out,), -1, np.int32)
    episodes[:n_total] = np.concatenate(ep_parts) if ep_parts else []
    merged.update(num_rows=n_total, episodes=episodes,
                  dropped_truncated=sum(int(b.get("dropped_truncated", 0)) for b in batches))
    return merged


def gather_local(batch: Mapping, *, rows_multiple: int, length_buckets: Sequence[int], pad_id: int = 0) -> dict:
    """All-gather every process's own batch and merge them (:func:`merge_local_batches`); the
    same merged batch on every process. One process: the batch as given."""
    if process.count() == 1:
        return dict(batch)
    host = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in batch.items()}
    return merge_local_batches(collectives.allgather_objects(host), rows_multiple=rows_multiple,
                               length_buckets=length_buckets, pad_id=pad_id)


def to_global(batch: Mapping, scope: str, *, rows_multiple: int, length_buckets: Sequence[int],
              pad_id: int = 0, what: str = "the training batch") -> dict:
    """The batch every process trains on (module docstring); ValueError for another ``scope``."""
    if scope not in SCOPES:
        raise ValueError(f"batch scope must be one of {SCOPES}, got {scope!r}")
    if process.count() == 1:
        return dict(batch)
    if scope == "local":
        batch = gather_local(batch, rows_multiple=rows_multiple, length_buckets=length_buckets, pad_id=pad_id)
    check_same(batch, what)
    return dict(batch)
