"""Learning curves from a metrics JSONL file (matplotlib, Agg backend: no display needed)."""
from __future__ import annotations

import math
import pathlib
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from skillax import process  # noqa: E402
from skillax.rl.metrics import read_jsonl  # noqa: E402

_SKIP = {"step", "time", "elapsed"}


def plot(jsonl_path: str | pathlib.Path, out_png: str | pathlib.Path, keys: Sequence[str] | None = None,
         *, ncols: int = 3) -> list[str]:
    """Draw one panel per metric (y) against step (x) and save a PNG.

    Args:
      jsonl_path: file written by :class:`skillax.rl.metrics.MetricsWriter`.
      out_png: output image path (parents created).
      keys: metrics to draw (default: every numeric key present).
    Returns: the keys drawn. Raises ValueError when the file has no records or a requested
    key never appears. Multi-process runs: only process 0 draws (the others return []).
    """
    if not process.is_writer():
        return []
    recs = read_jsonl(jsonl_path)
    if not recs:
        raise ValueError(f"{jsonl_path} holds no metrics")
    numeric = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    if keys is None:
        keys = sorted({k for r in recs for k, v in r.items() if k not in _SKIP and numeric(v)})
    missing = [k for k in keys if not any(k in r for r in recs)]
    if missing:
        raise ValueError(f"keys {missing} not found in {jsonl_path}")
    n = max(len(keys), 1)
    cols = min(ncols, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, k in zip(axes.flat, keys):
        pts = [(r["step"], r[k]) for r in recs if k in r and numeric(r[k])]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if len(pts) < 50 else None)
        ax.set_title(k, fontsize=9)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    out = pathlib.Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return list(keys)
