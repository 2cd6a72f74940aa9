"""skillax command line.

    python -m skillax.main --config configs/<x>.py [--config.key=value ...] [--workdir DIR]

``config.mode`` selects what runs (see ``skillax.modes.MODES``). Overrides use
ml_collections' ``--config.a.b=value`` syntax. Multi-process runs (TPU pods, GPU hosts):
``config.distributed`` (``skillax.distributed``; README "Several hosts").
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from absl import app, flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file("config", None, "Path to a configs/*.py file.",
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Output folder (checkpoints, metrics, plots).")


def main(argv):
    del argv
    from skillax import modes

    cfg = _CONFIG.value
    if cfg is None:
        raise app.UsageError("--config is required, e.g. --config configs/default.py")
    from skillax import distributed

    distributed.initialize(cfg)     # before any other JAX use; a no-op for one process
    modes.run(cfg, _WORKDIR.value)


def cli():
    app.run(main)


if __name__ == "__main__":
    cli()
