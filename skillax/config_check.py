"""Check a whole config before a mode loads a model (issue 23 item 5): a bad key fails in
seconds, not after the SFT warm start.

``check_config(cfg)`` runs in ``modes.run`` before the mode's ``run``. It calls the validators
the code already has (``EngineConfig``, ``optim.make_schedule``, ``engine_mesh``, each
method's own checks in ``skillax.methods.<method>.checks``) instead of restating them, and adds
the one check nothing made before the first RL step: the largest ``train.length_buckets`` must
hold the longest rollout row the method can produce (``row_budget``: prompt + response,
at most ``model.max_len`` tokens; a longer row raised "exceeds the largest training bucket" in
``build_batch`` only after SFT and the first rollouts). Every failing check is reported at once
(``ConfigError``, a ValueError).
"""

from __future__ import annotations

import importlib

# modes whose run() builds a trainer from config.train / config.mesh
TRAINS = frozenset({"sft", "skill1", "skillos", "skill_alpha"})
# each method's own checks: check_config(cfg) (raises ValueError) and row_budget(cfg) -> (tokens, why)
METHOD_CHECKS = {"skill1": "skillax.methods.skill1.checks", "skillos": "skillax.methods.skillos.checks",
                 "skill_alpha": "skillax.methods.skill_alpha.checks"}


class ConfigError(ValueError):
    """One or more config keys cannot run; the message lists each as ``- <problem>``."""


def check_buckets(buckets, need: int, why: str) -> None:
    """``train.length_buckets`` must be ascending positive ints whose largest holds ``need``
    tokens (the longest row the run can build: ``why`` says where it comes from)."""
    b = [int(x) for x in buckets]
    if not b or any(x < 1 for x in b) or b != sorted(set(b)):
        raise ValueError(f"train.length_buckets must be ascending positive sizes, got {tuple(buckets)}")
    if b[-1] < need:
        raise ValueError(f"train.length_buckets: the largest bucket {b[-1]} is shorter than the longest "
                         f"rollout row ({need} tokens = {why}); the first RL step would fail after the "
                         f"SFT warm start. Add a bucket >= {need} (or lower the budget)")


def check_train(cfg) -> None:
    """``config.train`` / ``config.rl`` / ``config.mesh`` through the engine's own constructors:
    update_layout, mini_batches/epochs, lr schedule, mesh shape vs the devices, micro-batch vs
    the mesh's batch shards. Imports JAX (no model)."""
    from skillax.methods.common.engine import EngineConfig, batch_shards, engine_mesh
    from skillax.rl import optim

    tc = EngineConfig.from_config(cfg.train, cfg.get("rl"))
    optim.make_schedule(tc.lr, max(tc.total_steps * tc.updates_per_step, 1), warmup_ratio=tc.warmup_ratio,
                        kind=tc.schedule)
    mesh = engine_mesh(cfg.get("mesh"))
    shards = batch_shards(mesh)
    if shards > 1:
        sft = cfg.get("sft") or {}
        sizes = [("train.micro_batch", tc.micro_batch)]
        if int(sft.get("steps", 0) or 0) > 0:
            sizes.append(("sft.batch_size", sft.get("batch_size", shards)))
        for key, v in sizes:
            if int(v) % shards:
                raise ValueError(f"{key}={v} must be a multiple of the batch shards data x fsdp = {shards} "
                                 f"of mesh {dict(mesh.shape)}")


def check_config(cfg) -> None:
    """Raise ConfigError listing every problem of ``cfg`` found without loading a model."""
    mode = str(cfg.get("mode", ""))
    problems: list[str] = []

    def attempt(fn, *args):
        try:
            fn(*args)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            problems.append(str(e.args[0]) if e.args else repr(e))

    from skillax import log_level

    attempt(log_level.apply, cfg.get("log_level", "warning"))
    from skillax import compile_cache

    attempt(compile_cache.cache_dir, cfg.get("compilation_cache", "auto"), "gpu")
    checks = importlib.import_module(METHOD_CHECKS[mode]) if mode in METHOD_CHECKS else None
    if checks is not None:
        attempt(checks.check_config, cfg)
    if mode in TRAINS and "train" in cfg:
        attempt(check_train, cfg)
        if checks is not None:
            try:
                need, why = checks.row_budget(cfg)
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                problems.append(str(e.args[0]) if e.args else repr(e))
            else:
                attempt(check_buckets, cfg.train.length_buckets, need, why)
    if problems:
        raise ConfigError(f"config.mode={mode!r}: {len(problems)} setting(s) cannot run:\n"
                          + "\n".join(f"  - {p}" for p in problems))
