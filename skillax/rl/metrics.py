"""Per-step metrics: one JSONL line per step plus a tqdm progress bar.

Each line is ``{"step": int, "time": unix seconds, "elapsed": run seconds, **metrics}``; jax /
numpy scalars are converted to Python floats/ints (arrays with more than one element are
rejected). ``elapsed`` is the run's wall time across resumes: seconds since this writer
opened plus the last ``elapsed`` of the records it kept (time spent dead between a kill and
the restart is not counted).

Resume (issue 23, item 3): the writer is opened with ``initial_step`` = the next step the run
executes; records of steps ``>= initial_step`` (logged after the checkpoint the run resumed
from, about to be logged again) and a line cut by a kill are removed first
(:func:`skillax.rl.durable.truncate_jsonl`), so every step has exactly one line. A run
without a checkpoint opens with ``initial_step = 0`` and starts an empty log.
:func:`read_jsonl` reads a log back (last value wins for repeated steps).
"""
from __future__ import annotations

import json
import math
import pathlib
import time
from typing import Any, Mapping

import numpy as np
from tqdm.auto import tqdm

from skillax import process
from skillax.rl.durable import read_jsonl_prefix, truncate_jsonl


def _scalar(k: str, v: Any):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    a = np.asarray(v)
    if a.size != 1:
        raise ValueError(f"metric {k!r} is not a scalar (shape {a.shape})")
    x = a.reshape(()).item()
    return x


def _json_float(x):
    """NaN/inf are not JSON: write them as strings so a bad step is visible, not a crash."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


class MetricsWriter:
    """Append per-step metrics to ``path`` (JSONL) and show a progress bar.

    Args:
      path: JSONL file (parent folders created).
      total_steps: progress-bar length (None: unknown).
      initial_step: the next step this run writes (the restored step + 1 on resume, 0 for a
        fresh run): records of steps >= it are removed from ``path`` (module docstring).
      progress: show the tqdm bar.
      bar_keys: metric names shown in the bar postfix (default: the first 4 written).
    In a multi-process run only process 0 writes (``skillax.process.is_writer``); the others
    return the same records from :meth:`write` and touch no file.
    """

    def __init__(self, path: str | pathlib.Path, *, total_steps: int | None = None, initial_step: int = 0,
                 progress: bool = True, bar_keys: tuple[str, ...] | None = None):
        self.path = pathlib.Path(path)
        self._f = None
        self._elapsed0 = 0.0
        if process.is_writer():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            truncate_jsonl(self.path, int(initial_step))
            kept, _ = read_jsonl_prefix(self.path, int(initial_step))
            self._elapsed0 = max([float(json.loads(x).get("elapsed", 0.0)) for x in kept] + [0.0])
            self._f = open(self.path, "a", encoding="utf-8")
        progress = progress and process.is_writer()
        self._t0 = time.time()
        self._bar_keys = bar_keys
        self._bar = tqdm(total=total_steps, initial=int(initial_step), disable=not progress, dynamic_ncols=True)

    def write(self, step: int, metrics: Mapping[str, Any]) -> dict:
        """Write one line for ``step``; returns the record written."""
        now = time.time()
        rec = {"step": int(step), "time": now, "elapsed": self._elapsed0 + now - self._t0}
        for k, v in metrics.items():
            if k in rec:
                raise ValueError(f"metric name {k!r} is reserved")
            rec[k] = _json_float(_scalar(k, v))
        if self._f is not None:
            self._f.write(json.dumps(rec) + "\n")
            self._f.flush()
        keys = self._bar_keys or tuple(k for k in metrics)[:4]
        self._bar.set_postfix({k: rec[k] for k in keys if k in rec}, refresh=False)
        self._bar.update(max(int(step) + 1 - self._bar.n, 0))   # step s done = s + 1 steps
        return rec

    def close(self) -> None:
        self._bar.close()
        if self._f is not None:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_jsonl(path: str | pathlib.Path) -> list[dict]:
    """All records of a metrics file, sorted by step; a repeated step keeps its last record."""
    by_step: dict[int, dict] = {}
    for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            by_step[int(rec["step"])] = rec
    return [by_step[s] for s in sorted(by_step)]
