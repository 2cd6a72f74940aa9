"""Input pipelines on grain (``grain.MapDataset``): SFT transcripts and task streams.

Order of operations (each host builds the same pipeline with its own shard)::

    source records -> shard [shard_index::shard_count] -> seed + shuffle -> repeat(num_epochs)
                   -> map(encode) -> batch(batch_size, drop_remainder) -> iterator

* Shuffling is seeded and **re-drawn every epoch** (grain's ``shuffle().repeat()``).
* Sharding is by slicing the record list, so hosts see disjoint records; every host
  gets ``ceil`` or ``floor`` of ``N / shard_count`` records per epoch.
* :func:`make_iterator` returns grain's dataset iterator: ``next(it)``, and
  ``it.get_state()`` -> a small JSON-able dict (``{"next_index": n}``) that goes into the
  checkpoint's host payload; ``it.set_state(state)`` on a freshly built iterator of the
  same pipeline continues the exact same sequence.

Grain API used: ``grain.MapDataset.source/.seed/.shuffle/.repeat/.map/.batch/.to_iter_dataset``
(grain 0.2.x).
"""
from __future__ import annotations

import json
import pathlib
from typing import Any, Callable, Sequence

import grain

from skillax.rl import sft


def read_jsonl(path: str | pathlib.Path, *, require: str | None = None) -> list[dict]:
    """Records of a JSONL file (blank lines skipped).

    Raises ValueError naming the line for invalid JSON, a non-object line, or a record
    missing the ``require`` key.
    """
    out = []
    for i, line in enumerate(pathlib.Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{i}: invalid JSON ({e.msg})") from None
        if not isinstance(rec, dict):
            raise ValueError(f"{path}:{i}: expected a JSON object, got {type(rec).__name__}")
        if require is not None and require not in rec:
            raise ValueError(f"{path}:{i}: record has no {require!r} key")
        out.append(rec)
    return out


def _base(records: Sequence[Any], seed: int, shuffle: bool, shard_index: int, shard_count: int,
          num_epochs: int | None) -> grain.MapDataset:
    if shard_count < 1 or not 0 <= shard_index < shard_count:
        raise ValueError(f"need 0 <= shard_index < shard_count, got {shard_index}, {shard_count}")
    if len(records) < shard_count:
        raise ValueError(f"{len(records)} records cannot be split over {shard_count} shards")
    if num_epochs is not None and num_epochs < 1:
        raise ValueError(f"num_epochs must be >= 1 or None (forever), got {num_epochs}")
    ds = grain.MapDataset.source(list(records))[shard_index::shard_count]
    if shuffle:
        ds = ds.seed(seed).shuffle()
    return ds.repeat(num_epochs)


def task_dataset(records: Sequence[Any], *, seed: int = 0, shuffle: bool = True, shard_index: int = 0,
                 shard_count: int = 1, num_epochs: int | None = None) -> grain.MapDataset:
    """A stream of task records (any picklable objects, e.g. dicts), one per element.

    ``num_epochs=None`` repeats forever. Method loops draw groups with
    ``[next(it) for _ in range(group_size)]``.
    """
    return _base(records, seed, shuffle, shard_index, shard_count, num_epochs)


def sft_dataset(
    records: Sequence[dict] | str | pathlib.Path,
    encode: Callable[[list[dict]], tuple[Sequence[int], Sequence[int]]],
    *,
    batch_size: int,
    max_len: int,
    seed: int = 0,
    shuffle: bool = True,
    pad_id: int = 0,
    shard_index: int = 0,
    shard_count: int = 1,
    num_epochs: int | None = None,
    drop_remainder: bool = True,
) -> grain.MapDataset:
    """Batches of SFT rows from transcripts ``{"messages": [...]}``.

    Args:
      records: list of transcript dicts or a JSONL path.
      encode: ``messages -> (ids, assistant_mask)``, e.g.
        ``lambda m: render_with_masks(tokenizer, m)``.
      batch_size: rows per batch (per host). max_len: row length T (longer: truncated).
    Returns:
      MapDataset of dicts with (batch_size, max_len) arrays "tokens", "positions", "valid",
      "loss_mask", "segment_ids" (see :func:`skillax.rl.sft.make_example`).
    """
    if isinstance(records, (str, pathlib.Path)):
        records = read_jsonl(records, require="messages")
    for i, r in enumerate(records):
        if not isinstance(r, dict) or not isinstance(r.get("messages"), list):
            raise ValueError(f"record {i} has no 'messages' list")
    if batch_size < 1 or max_len < 2:
        raise ValueError(f"need batch_size >= 1 and max_len >= 2, got {batch_size}, {max_len}")
    ds = _base(records, seed, shuffle, shard_index, shard_count, num_epochs)
    ds = ds.map(lambda r: sft.make_example(*encode(r["messages"]), max_len=max_len, pad_id=pad_id))
    return ds.batch(batch_size, drop_remainder=drop_remainder, batch_fn=sft.collate)


def make_iterator(ds: grain.MapDataset):
    """Grain iterator with ``get_state()`` / ``set_state()`` (JSON-able state)."""
    return iter(ds.to_iter_dataset())
