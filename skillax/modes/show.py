"""``config.mode = "show"``: print every key of a config with its value and one-line help
(issue 23 item 7); loads no model and imports no JAX.

    python -m skillax.main --config configs/skill1_alfworld_learning.py --config.mode=show

One line per key, sorted: ``train.lr = 1e-05  # <help>``; the help comes from the docstrings
and comments that already describe the key (``skillax.config_help``), "-" when none does.
``mode`` itself is a key: the header and the ``mode`` line give the file's own mode, the
one the config runs without ``--config.mode=show``; other overrides given with it are shown.
"""

from __future__ import annotations

import sys


def format_value(v) -> str:
    if hasattr(v, "items") and not isinstance(v, (str, bytes)):
        return "{}"
    return repr(tuple(v)) if isinstance(v, (list, tuple)) else repr(v)


def lines(cfg, config_path: str | None = None) -> list[str]:
    """The header and one ``key = value  # help`` line per key of ``cfg``."""
    from skillax import config_help
    from skillax.config_keys import load_config_file, walk

    mode = str(cfg.get("mode", ""))
    if config_path:
        try:
            mode = str(load_config_file(config_path).get("mode", mode))
        except Exception:   # noqa: BLE001 -- the header then says the mode is unknown
            mode = "?"
    helps = config_help.key_help(cfg, config_path, mode)
    items = list(walk(cfg))
    described = sum(k in helps for k, _ in items)
    out = [f"# {config_path or 'config'}: mode {mode!r} (shown with --config.mode=show); "
           f"{len(items)} keys, {described} with help"]
    for key, value in items:
        shown = repr(mode) if key == "mode" else format_value(value)
        out.append(f"{key} = {shown}  # {helps.get(key, '-')}")
    return out


def run(cfg, workdir=None, config_path: str | None = None):
    """Print the config as the run would use it: Skill1's released-code preset applied
    (``skillax.config_preset.apply_objective_preset``)."""
    del workdir
    if cfg.get("objective") == "released_code":
        from skillax.config_preset import apply_objective_preset

        cfg = apply_objective_preset(cfg)
    text = "\n".join(lines(cfg, config_path))
    sys.stdout.write(text + "\n")
    return text
