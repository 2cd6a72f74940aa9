"""Per-step metrics: one JSONL line per step plus a tqdm progress bar.

Each line is ``{"step": int, "time": unix seconds, "elapsed": seconds since the writer
opened, **metrics}``; jax / numpy scalars are converted to Python floats/ints (arrays with
more than one element are rejected). The file is appended to, so a resumed run continues
the same log; :func:`read_jsonl` reads it back (last value wins for repeated steps).
"""
from __future__ import annotations

import json
import math
import pathlib
import time
from typing import Any, Mapping

import numpy as np
from tqdm.auto import tqdm


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
      initial_step: bar start (e.g. the restored step on resume).
      progress: show the tqdm bar.
      bar_keys: metric names shown in the bar postfix (default: the first 4 written).
    """

    def __init__(self, path: str | pathlib.Path, *, total_steps: int | None = None, initial_step: int = 0,
                 progress: bool = True, bar_keys: tuple[str, ...] | None = None):
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", encoding="utf-8")
        self._t0 = time.time()
        self._bar_keys = bar_keys
        self._bar = tqdm(total=total_steps, initial=initial_step, disable=not progress, dynamic_ncols=True)
        self._last_step = initial_step

    def write(self, step: int, metrics: Mapping[str, Any]) -> dict:
        """Write one line for ``step``; returns the record written."""
        now = time.time()
        rec = {"step": int(step), "time": now, "elapsed": now - self._t0}
        for k, v in metrics.items():
            if k in rec:
                raise ValueError(f"metric name {k!r} is reserved")
            rec[k] = _json_float(_scalar(k, v))
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()
        keys = self._bar_keys or tuple(k for k in metrics)[:4]
        self._bar.set_postfix({k: rec[k] for k in keys if k in rec}, refresh=False)
        self._bar.update(max(int(step) - self._last_step, 0))
        self._last_step = max(self._last_step, int(step))
        return rec

    def close(self) -> None:
        self._bar.close()
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
