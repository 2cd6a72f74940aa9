"""A training run's folder on start (a method, or mode=sft): refuse a resume whose config
changes the run's meaning, record each resume, write ``config.json`` (issue 23, item 4).

A workdir that holds a checkpoint is resumed. Its ``config.json`` is the config of the run
that wrote the checkpoints; the new config is compared key by key (flattened, ``a.b.c``):

* keys in :data:`MAY_CHANGE` (and everything under a prefix there) do not change what the
  run means -- how long it runs, how often it checkpoints, what is evaluated, where it runs
  (mesh, workers, memory knobs), the warm start (already consumed) -- and may differ;
* every other key (model, mode, objective, group size, seeds, rewards, library, rollout,
  optimiser, ...) refuses the resume with :class:`ConfigChangedError`, naming each key with
  its old and new value, unless ``allow_config_change = True`` (``config_defaults.base``);
* a key present on one side only (the code gained or lost a setting since) is not a change.

Each resume appends one line to ``<workdir>/resumes.jsonl`` (time, the keys that differ,
whether the override was used); ``config.json`` then holds the current config (atomic write).
"""

from __future__ import annotations

import json
import pathlib
import time

from skillax import process
from skillax.rl.durable import commit_text

CONFIG_FILE = "config.json"
RESUMES_FILE = "resumes.jsonl"

# keys (or prefixes "x.") whose change keeps the meaning of a resumed run
MAY_CHANGE = (
    "steps", "checkpoint_every", "keep_checkpoints", "max_train_minutes", "train_until_unix",
    "train_until_file", "distributed", "distributed.", "runtime.", "allow_config_change", "log_level", "stage",
    "compilation_cache",
    "init_skills",   # read when a run starts, never on resume (the library is not seeded twice)
    "eval.", "infer.", "warmstart.", "mesh.", "sft.",
    "env.workers", "model.sampler_memory_gb", "model.share_prefill", "model.cache_attention",
    "train.micro_batch", "train.logprob_chunk", "train.remat", "train.length_buckets", "train.update_layout",
    "rl.objective_grad_norms_every",   # a diagnostic: more metrics, the same updates
    # play throughput: the same samples (per-(turn, episode) keys; padded rows never sample; a
    # reset depends on its task only), up to the numerics of other kernel shapes
    "rollout.overlap", "rollout.prefetch_resets", "model.batch_buckets", "model.prompt_buckets",
    "model.batch_floor", "model.prefill_floor",
    "model.precompile",   # when programs build, not what they sample
    "model.precompile_max_programs",
)


class ConfigChangedError(ValueError):
    """A resume with a config that changes the run's meaning (keys and values in the message)."""


def flatten(tree: dict, prefix: str = "") -> dict:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists kept as values)."""
    out = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _matches(key: str, patterns) -> bool:
    """Whether ``key`` is one of ``patterns`` or under one ending in "." (a prefix)."""
    return any(key == m or (m.endswith(".") and key.startswith(m)) for m in patterns)


def may_change(key: str, new: dict, *, fixed=(), free=()) -> bool:
    """Whether ``key`` may differ on resume (:data:`MAY_CHANGE`; ``train.total_steps`` too while
    ``train.schedule`` is "constant": it then only shapes a schedule that is not used).

    ``fixed`` / ``free``: keys or "x." prefixes a mode takes out of / adds to ``MAY_CHANGE``
    (``mode=sft``: its ``sft.*`` keys are the run's meaning, ``export_dir`` only an output)."""
    if _matches(key, fixed):
        return False
    if _matches(key, free):
        return True
    if key == "train.total_steps" and new.get("train.schedule", "constant") == "constant":
        return True
    return _matches(key, MAY_CHANGE)


def config_changes(old: dict, new: dict) -> dict:
    """{key: (old value, new value)} for keys on both sides (flattened) whose values differ."""
    return {k: (old[k], new[k]) for k in sorted(set(old) & set(new)) if old[k] != new[k]}


def has_checkpoint(workdir: pathlib.Path) -> bool:
    """Whether ``<workdir>/checkpoints`` holds a committed step (orbax names them by number)."""
    d = pathlib.Path(workdir) / "checkpoints"
    return d.is_dir() and any(p.name.isdigit() for p in d.iterdir())


def prepare(cfg, workdir: pathlib.Path, *, fixed=(), free=()) -> dict:
    """Check a resume against the saved config (module docstring), record it, write
    ``config.json``. Returns {"resume": bool, "changed": {key: [old, new]}}. Raises
    ConfigChangedError before anything in the workdir is touched. ``fixed`` / ``free``: as
    :func:`may_change`.

    ``config.json`` also records ``runtime`` (process count, devices, the engines' mesh:
    ``distributed.runtime_info``); every process checks the resume, only process 0 writes."""
    workdir = pathlib.Path(workdir)
    text = cfg.to_json_best_effort(indent=2)
    if "mesh" in cfg:
        from skillax import distributed
        from skillax.methods.common.engine import engine_mesh
        tree = json.loads(text)
        tree["runtime"] = distributed.runtime_info(engine_mesh(cfg.mesh))
        text = json.dumps(tree, indent=2)
    if process.is_writer():
        workdir.mkdir(parents=True, exist_ok=True)
    saved = workdir / CONFIG_FILE
    info = {"resume": False, "changed": {}}
    if has_checkpoint(workdir) and saved.is_file():
        try:
            old = flatten(json.loads(saved.read_text(encoding="utf-8")))
        except ValueError as e:
            raise ConfigChangedError(f"{saved} is not readable JSON ({e}); it records the config of the "
                                     "checkpoints in this workdir -- restore it or use another workdir") from None
        new = flatten(json.loads(text))
        changed = config_changes(old, new)
        refused = {k: v for k, v in changed.items() if not may_change(k, new, fixed=fixed, free=free)}
        override = bool(cfg.get("allow_config_change", False))
        if refused and not override:
            keys = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in refused.items())
            raise ConfigChangedError(
                f"{workdir} holds checkpoints of a run with another config ({keys}). These keys change "
                "what the run means, so resuming would mix two runs. Use a new --workdir, put the old "
                "values back, or pass --config.allow_config_change=True to resume anyway (recorded in "
                f"{RESUMES_FILE}).")
        info = {"resume": True, "changed": {k: list(v) for k, v in changed.items()}}
        line = {"time": time.time(), "changed": info["changed"],
                "override": sorted(refused) if refused else []}
        if process.is_writer():
            with open(workdir / RESUMES_FILE, "a", encoding="utf-8") as f:
                f.write(json.dumps(line, default=str) + "\n")
        if changed:
            print(f"resuming with changed settings: {', '.join(changed)}"
                  + (f" (allowed by allow_config_change: {', '.join(refused)})" if refused else ""))
    if process.is_writer():
        commit_text(saved, text)
    return info
