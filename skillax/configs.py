"""Configs by name (issue 23 item 10): ``skillax.configs.get("default")`` is
``configs/default.py``'s ``get_config()``, locked as the CLI's ``--config`` flag locks it.

The config files live in the repo's ``configs/`` folder; ``skillax/_configs`` is a symlink to it
that ``pyproject.toml`` ships as package data, so an installed (also non-editable) skillax finds
them without the repo or its working directory (``CONFIG_DIR``).
"""
from __future__ import annotations

import difflib
import importlib.util
import os
import pathlib
from typing import Any, Mapping

CONFIG_DIR = pathlib.Path(__file__).resolve().parent / "_configs"


def names() -> list[str]:
    """The config names ``get`` accepts, sorted.

    >>> "default" in skillax.configs.names()
    True
    """
    return sorted(p.stem for p in CONFIG_DIR.glob("*.py") if not p.stem.startswith("_"))


def path(name: str) -> pathlib.Path:
    """The file of config ``name`` (a name from :func:`names`, or a path to a ``.py`` file).

    Raises ValueError naming the available configs when ``name`` is neither."""
    if str(name).endswith(".py") or os.sep in str(name):
        p = pathlib.Path(name)
        if not p.is_file():
            raise FileNotFoundError(f"config file {p} does not exist")
        return p
    p = CONFIG_DIR / f"{name}.py"
    if not p.is_file() or str(name).startswith("_"):
        have = names()
        close = difflib.get_close_matches(str(name), have, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown config {name!r}{hint} Available: {', '.join(have)}")
    return p


def get(name: str, overrides: Mapping[str, Any] | None = None):
    """A config as an ``ml_collections.ConfigDict``: the ``get_config()`` of ``configs/<name>.py``
    (or of a ``.py`` path), locked (a misspelt key raises instead of being added), then
    ``overrides`` applied: dotted keys as on the command line (``--config.train.lr=...``).

    Args:
      name: e.g. ``"default"``, ``"skill1_alfworld_learning"`` (see :func:`names`) or a path.
      overrides: ``{"steps": 1, "model.path": "smollm2"}``; an unknown key raises KeyError.
    Raises:
      ValueError: an unknown name (the message lists the available ones).

    >>> cfg = skillax.configs.get("default", {"steps": 1})
    >>> cfg.mode, cfg.steps
    ('skill1', 1)
    """
    file = path(name)
    spec = importlib.util.spec_from_file_location(f"skillax_config_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cfg = module.get_config()
    cfg.lock()
    if overrides:
        from skillax.config_keys import apply_overrides

        apply_overrides(cfg, overrides)   # an old spelling / unknown key: a one-line KeyError
    return cfg
