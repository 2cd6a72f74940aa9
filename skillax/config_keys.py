"""The keys of a config (dotted paths) and the one-line error for a misspelt override
(issue 23 item 7): ``--config.trian.lr=1`` names ``trian.lr`` and the closest keys."""

from __future__ import annotations

import difflib
import importlib.util
from typing import Iterator, Sequence


def is_section(value) -> bool:
    """A nested ConfigDict (or dict) of keys, as opposed to a value."""
    return hasattr(value, "items") and not isinstance(value, (str, bytes))


def walk(cfg, prefix: str = "") -> Iterator[tuple[str, object]]:
    """(dotted key, value) of every leaf of ``cfg``, depth first, keys sorted."""
    for k in sorted(cfg.keys()):
        v = cfg[k]
        key = f"{prefix}{k}"
        if is_section(v) and len(v):
            yield from walk(v, key + ".")
        else:
            yield key, v


def all_keys(cfg) -> list[str]:
    """Every dotted key of ``cfg``: leaves and the sections above them."""
    out: set[str] = set()
    for key, _ in walk(cfg):
        parts = key.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return sorted(out)


def missing_part(cfg, key: str) -> str | None:
    """The leading part of ``key`` (``a.b.c``) that ``cfg`` does not have, or None when every
    part exists (or a part is a value, e.g. a tuple index: left to ml_collections)."""
    node = cfg
    parts = key.split(".")
    for i, p in enumerate(parts):
        if not is_section(node):
            return None
        if p not in node:
            return ".".join(parts[:i + 1])
        node = node[p]
    return None


def closest(cfg, key: str, n: int = 3) -> list[str]:
    """Up to ``n`` existing keys closest to ``key`` (difflib ratio >= 0.6 over the leaf keys,
    then over sections, then by the last part alone)."""
    leaves = [k for k, _ in walk(cfg)]
    got = difflib.get_close_matches(key, leaves, n=n, cutoff=0.6)
    if got:
        return got
    keys = all_keys(cfg)
    got = difflib.get_close_matches(key, keys, n=n, cutoff=0.6)
    if not got:
        leaf = key.rsplit(".", 1)[-1]
        by_leaf = {k.rsplit(".", 1)[-1]: k for k in keys}
        got = [by_leaf[x] for x in difflib.get_close_matches(leaf, list(by_leaf), n=n, cutoff=0.6)]
    return got


_ENDPOINT = ("model", "base_url", "api_key_env", "max_concurrency", "timeout_s")
# old spelling -> new key (issue 23 item 7: one spelling of endpoints, ``<role>.openai.*``,
# ``config_defaults.openai_endpoint``). ``judge.max_retries`` keeps its name (the judge's
# re-asks); the endpoint's HTTP retries moved to ``judge.openai.max_retries``.
RENAMED = {**{f"{role}.{k}": f"{role}.openai.{k}" for role in ("executor", "judge") for k in _ENDPOINT},
           "executor.max_retries": "executor.openai.max_retries"}


def renamed(cfg, key: str) -> str | None:
    """The new key of an old spelling ``key`` (:data:`RENAMED`) when ``cfg`` has that new key
    and lacks ``key``; else None."""
    new = RENAMED.get(key)
    if new is None or missing_part(cfg, key) is None or missing_part(cfg, new) is not None:
        return None
    return new


def renamed_message(cfg, key: str) -> str | None:
    """The one-line error for an old spelling (:func:`renamed`), or None."""
    new = renamed(cfg, key)
    if new is None:
        return None
    return (f"config key {key!r} was renamed to {new!r} (one spelling for endpoints across methods: "
            f"<role>.openai.*); use --config.{new}=...")


def apply_overrides(cfg, overrides) -> None:
    """``cfg.update_from_flattened_dict(overrides)`` after checking every dotted key: an old
    spelling (:data:`RENAMED`) or a key ``cfg`` lacks raises KeyError with one line naming the
    new / closest keys (the Python API's counterpart of :func:`unknown_override`)."""
    for key in dict(overrides):
        moved = renamed_message(cfg, key)
        if moved:
            raise KeyError(moved)
        if missing_part(cfg, key) is not None:
            near = closest(cfg, key)
            raise KeyError(f"unknown config key {key!r}" + (f"; closest: {', '.join(near)}" if near else ""))
    cfg.update_from_flattened_dict(dict(overrides))


def load_config_file(spec: str):
    """``get_config()`` of a config file (``path`` or ``path:arg``, as config_flags reads it)."""
    path, _, arg = spec.partition(":")
    mod_spec = importlib.util.spec_from_file_location("_skillax_config", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module.get_config(arg) if arg else module.get_config()


def config_argv(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the ``--config`` file, the ``--config.<key>`` override keys) of a command line."""
    path, keys = None, []
    args = list(argv[1:])
    for i, a in enumerate(args):
        if a == "--":
            break
        if a in ("--config", "-config") and i + 1 < len(args):
            path = args[i + 1]
        elif a.startswith(("--config=", "-config=")):
            path = a.split("=", 1)[1]
        elif a.startswith(("--config.", "-config.", "--noconfig.")):
            keys.append(a.split("config.", 1)[1].split("=", 1)[0])
    return path, keys


def unknown_override(argv: Sequence[str]) -> str | None:
    """The one-line error for the first ``--config.<key>`` override of ``argv`` naming no key of
    its config file, e.g. ``unknown config key 'trian.lr' (no 'trian'); closest: train.lr``;
    None when every override key exists (or the file cannot be read)."""
    path, keys = config_argv(argv)
    if not path:
        return None
    try:
        cfg = load_config_file(path)
    except Exception:   # noqa: BLE001 -- the caller falls back to ml_collections' own message
        return None
    for key in keys:
        bad = missing_part(cfg, key)
        if bad is None:
            continue
        moved = renamed_message(cfg, key)
        if moved:
            return moved
        near = closest(cfg, key)
        where = f" (no {bad!r} in {path})" if bad != key else f" (not in {path})"
        hint = f"; closest: {', '.join(near)}" if near else "; --config.mode=show lists every key"
        return f"unknown config key {key!r}{where}{hint}"
    return None
