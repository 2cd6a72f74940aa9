"""Held-out evaluation records and their statistics (pure Python + numpy; no jax).

* :mod:`skillax.evaluation.records` -- one JSON line per evaluated episode (the unit every
  method's evaluation writes, so arms can be paired game by game);
* :mod:`skillax.evaluation.stats` -- Wilson intervals, paired bootstrap differences and the
  per-task-type summary of a set of records.
"""

from skillax.evaluation.records import EpisodeRecord, read_records, write_records  # noqa: F401
from skillax.evaluation.stats import (  # noqa: F401
    paired_bootstrap, paired_delta, paired_steps, pooled_paired_delta, seed_spread, summarize, wilson_interval)
