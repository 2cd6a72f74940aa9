"""Redraw a run's learning curves from its metrics.jsonl (``mode=plot``, skillax.modes.plot).

Command (no model is loaded; seconds):
    python -m skillax.main --config configs/plot.py --workdir runs/default \
        [--config.plot.keys=success_rate,library_size] [--config.plot.out=curves.png]

Should show: one JSON line ``{"png": ..., "keys": [...]}`` and the PNG (one panel per metric
against the RL step).
"""
import ml_collections

from skillax import config_defaults


def get_config():
    c = config_defaults.base("plot")
    c.plot = ml_collections.ConfigDict(dict(keys="", out=""))
    return c
