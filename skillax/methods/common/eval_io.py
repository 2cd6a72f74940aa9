"""Evaluation output shared by the three methods: per-episode records and their summaries.

Each (condition, split) of a held-out evaluation writes
``<workdir>/eval/<condition>__<split>.jsonl`` (:class:`skillax.evaluation.EpisodeRecord` per
game, the file the learning protocol pairs arms on) and returns the summary that goes into
``eval.json`` (:func:`skillax.evaluation.summarize`: success, Wilson 95 % interval, per task
type, mean steps, invalid-action rate, retrieval rate).
"""

from __future__ import annotations

import pathlib
import re
from typing import Sequence

from skillax import process
from skillax.evaluation import EpisodeRecord, summarize, write_records

_NAME = re.compile(r"^[a-z0-9_]+$")


def eval_splits(cfg) -> tuple[str, ...]:
    """``config.eval.splits`` (a tuple or comma-separated string), default the env's eval split."""
    s = cfg.eval.get("splits", None) if cfg.get("eval") is not None else None
    if not s:
        return (str(cfg.env.eval_split),)
    if isinstance(s, str):
        s = [x.strip() for x in s.split(",") if x.strip()]
    return tuple(str(x) for x in s)


def condition_path(workdir, condition: str, split: str) -> pathlib.Path:
    """``<workdir>/eval/<condition>__<split>.jsonl``: where :func:`write_condition` writes one
    (condition, split) and where the learning scripts (``benchmarks/learning``) read it."""
    return pathlib.Path(workdir) / "eval" / f"{condition}__{split}.jsonl"


def write_condition(workdir, condition: str, split: str, records: Sequence[EpisodeRecord]) -> dict:
    """Write the records of one (condition, split) and return their summary (with
    ``condition``, ``split`` and ``records`` = the file's path relative to ``workdir``). Only
    process 0 writes (``skillax.process.is_writer``); every process gets the summary."""
    if not _NAME.match(condition):
        raise ValueError(f"condition name {condition!r} must be lowercase letters, digits and '_'")
    workdir = pathlib.Path(workdir)
    path = condition_path(workdir, condition, split)
    if process.is_writer():                  # several processes: every one holds all records
        path = write_records(path, records)
    out = summarize(records)
    out.update(condition=condition, split=split, records=str(path.relative_to(workdir)))
    return out
