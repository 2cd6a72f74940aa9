"""Quiet logs by default (issue 23, item 6): absl's level (orbax, jax and grain log through
absl) set from ``config.log_level``.

The default "warning" keeps warnings and errors of the libraries and skillax's own printed
lines (progress bar, resume notes, evaluation results) and hides orbax's INFO lines (about
130 of a default run's ~150 lines, which also broke the progress bar apart). "info" or
"debug" shows them again; absl's ``--verbosity`` / ``-v`` flag, when given on the command
line, wins over the config.
"""

from __future__ import annotations

import logging

from absl import flags
from absl import logging as absl_logging

LEVELS = {"debug": absl_logging.DEBUG, "info": absl_logging.INFO, "warning": absl_logging.WARNING,
          "error": absl_logging.ERROR}


def apply(level: str = "warning") -> None:
    """Set absl's (and Python's root) log level to ``level`` (one of :data:`LEVELS`) unless
    ``--verbosity`` was given on the command line. Raises ValueError for another name."""
    name = str(level).lower()
    if name not in LEVELS:
        raise ValueError(f"log_level must be one of {sorted(LEVELS)}, got {level!r}")
    if flags.FLAGS.is_parsed() and flags.FLAGS["verbosity"].present:
        return
    absl_logging.set_verbosity(LEVELS[name])
    logging.getLogger().setLevel(getattr(logging, name.upper()))
