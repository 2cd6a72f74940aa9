"""``mode=plot``: redraw a run's learning curves from its ``metrics.jsonl`` (no model loaded).

    python -m skillax.main --config configs/plot.py --workdir runs/skill1 \
        [--config.plot.keys=success_rate,library_size] [--config.plot.out=curves.png]

One panel per metric against the RL step (``skillax.rl.plot.plot``; default: every numeric key
of the file), written to ``plot.out`` (default ``<workdir>/metrics.png``, the file the methods
write at the end of a run).
"""
from __future__ import annotations

import json
import pathlib


def run(cfg, workdir=None):
    """Returns dict(png, keys). Raises ValueError without ``--workdir`` or for keys the file
    never logs, FileNotFoundError when the run has no ``metrics.jsonl``."""
    from skillax.rl.plot import plot

    if not workdir:
        raise ValueError("mode=plot needs --workdir: the run whose metrics.jsonl is drawn")
    src = pathlib.Path(workdir) / "metrics.jsonl"
    if not src.exists():
        raise FileNotFoundError(f"{src} does not exist (no RL step was logged in {workdir})")
    keys = [k.strip() for k in str(cfg.plot.get("keys", "") or "").split(",") if k.strip()] or None
    out = pathlib.Path(str(cfg.plot.get("out", "") or "") or pathlib.Path(workdir) / "metrics.png")
    drawn = plot(src, out, keys)
    info = {"png": str(out), "keys": drawn}
    print(json.dumps(info))
    return info
