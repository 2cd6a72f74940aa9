"""skillax command line.

    python -m skillax.main --config configs/<x>.py [--config.key=value ...] [--workdir DIR]

``config.mode`` selects what runs (see ``skillax.modes.MODES``). Overrides use
ml_collections' ``--config.a.b=value`` syntax; ``--config.mode=show`` prints every key of the
config with its value and one-line help (``skillax.modes.show``). A misspelt key is a one-line
error naming the closest keys, and a setting that cannot run fails before any model loads
(``skillax.config_check``); both exit with status 2. Multi-process runs (TPU pods, GPU hosts):
``config.distributed`` (``skillax.distributed``; README "Several hosts").
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from skillax import modes as _modes  # noqa: E402  (lazy registry: imports no mode)

__doc__ = f"{__doc__}\n{_modes.help_text()}\n"   # --help prints this module's docstring

from absl import app, flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file("config", None, "Path to a configs/*.py file.",
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Output folder (checkpoints, metrics, plots).")

USAGE_EXIT = 2


def _fail(message: str) -> None:
    print(f"skillax: {message}", file=sys.stderr, flush=True)
    sys.exit(USAGE_EXIT)


def parse_flags(argv):
    """absl's flag parsing (``app.run``'s ``flags_parser`` hook) with a one-line error for an
    unknown ``--config.<key>`` override: ml_collections raises a KeyError/AttributeError chain
    there (57 traceback lines, the hint last); this names the key and the closest existing
    keys (``skillax.config_keys.unknown_override``) and exits with status 2."""
    try:
        return app.parse_flags_with_usage(argv)
    except (KeyError, AttributeError) as e:
        from skillax import config_keys

        msg = config_keys.unknown_override(argv)
        _fail(msg or f"bad config override: {str(e).strip(chr(39) + chr(34))}".replace("\n", " "))


def main(argv):
    del argv
    from skillax import modes

    cfg = _CONFIG.value
    if cfg is None:
        raise app.UsageError("--config is required, e.g. --config configs/default.py")
    path = config_flags.get_config_filename(flags.FLAGS["config"])
    if cfg.get("mode") != "show":
        from skillax import distributed

        distributed.initialize(cfg)     # before any other JAX use; a no-op for one process
    from skillax.config_check import ConfigError

    from skillax.distributed import run_guarded

    try:   # several processes: a lost peer ends this one with a clear line and status 3
        run_guarded(modes.run, cfg, _WORKDIR.value, config_path=path)
    except ConfigError as e:
        _fail(str(e))


def cli():
    app.run(main, flags_parser=parse_flags)


if __name__ == "__main__":
    cli()
