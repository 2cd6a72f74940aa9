"""Registry of ``config.mode`` values -> module with a ``run(cfg, workdir)`` function.

Modules are imported lazily so ``info`` does not pay for environments or methods. There is no
separate ``eval`` mode: a method evaluates a checkpoint or warm start with its own config and
``--config.steps=0`` (as the learning campaign's ``*_sft`` arms do).
"""

from __future__ import annotations

import importlib

MODES = {
    "generate": "skillax.modes.generate",
    "info": "skillax.modes.info",
    "sft": "skillax.modes.sft",
    "skill1": "skillax.methods.skill1",
    "skillos": "skillax.methods.skillos",
    "skill_alpha": "skillax.methods.skill_alpha",
    "plot": "skillax.modes.plot",
    "library": "skillax.modes.library",
    "serve": "skillax.modes.serve",
    "export": "skillax.modes.export",
    "show": "skillax.modes.show",
}

# one line per mode for ``python -m skillax.main --help`` (tests check every mode has one)
MODE_HELP = {
    "skill1": "train Skill1 (select, use, distil skills; configs/default.py, skill1_*.py)",
    "skillos": "train SkillOS (a curator of a skill repo; configs/skillos_*.py)",
    "skill_alpha": "train Skill-alpha (a skill editor, rollback reward; configs/skill_alpha_*.py)",
    "sft": "supervised fine-tuning on chat transcripts (configs/sft.py)",
    "generate": "sample or chat with a policy (configs/generate.py)",
    "info": "print a model's config, parameter count and the JAX devices",
    "library": "inspect the skills of a run's workdir, any method (configs/library.py)",
    "plot": "redraw a run's learning curves from its metrics.jsonl (configs/plot.py)",
    "serve": "serve a policy as an OpenAI-compatible endpoint (configs/serve.py)",
    "export": "export a run's policy to a Hugging Face folder (configs/export.py)",
    "show": "print every key of a config with its value and one-line help (no model loaded)",
}


def help_text() -> str:
    """The modes block of ``--help``: one line per mode, then how to see a config's keys."""
    lines = ["Modes (--config.mode=<mode>; each config file sets its own):"]
    lines += [f"  {m:<12} {MODE_HELP[m]}" for m in MODES]
    lines.append("Every key of a config with its value and help: --config.mode=show, e.g.")
    lines.append("  python -m skillax.main --config configs/default.py --config.mode=show")
    return "\n".join(lines)


# modes that load ``cfg.model``: its settings are checked against the checkpoint first
# modes that run as several cooperating processes (issue 21); the others refuse more than one
MULTI_PROCESS_MODES = frozenset({"info", "skill1", "skillos", "skill_alpha"})
LOADS_MODEL = frozenset({"generate", "info", "sft", "skill1", "skillos", "skill_alpha", "serve", "export"})


def run(cfg, workdir: str | None, config_path: str | None = None):
    """Run ``cfg.mode``. ``config_path``: the config file (``show`` reads its docstrings).
    Every mode but ``show`` first passes ``config_check.check_config`` (a bad key fails before
    any model loads; ConfigError)."""
    mode = cfg.mode
    from skillax import log_level

    log_level.apply(cfg.get("log_level", "warning"))   # orbax's INFO lines hidden by default
    if mode not in MODES:
        raise ValueError(f"unknown config.mode {mode!r}; choose one of {sorted(MODES)}")
    try:
        module = importlib.import_module(MODES[mode])
    except ModuleNotFoundError as e:
        raise ValueError(f"config.mode {mode!r} is not available in this build ({e})") from e
    if mode == "show":
        return module.run(cfg, workdir, config_path=config_path)
    if mode not in MULTI_PROCESS_MODES:   # before the config checks: no setting makes a pod run work
        from skillax.distributed import require_single_process
        require_single_process(f"config.mode={mode!r}")   # issue 21 items 2 and 4: the other methods
    from skillax.config_check import check_config

    check_config(cfg)                    # issue 23 item 5: seconds, not after the SFT warm start
    from skillax import compile_cache

    if mode in LOADS_MODEL:                                        # before the first jit build
        compile_cache.enable(cfg.get("compilation_cache", "auto"))
    if mode in LOADS_MODEL and "model" in cfg and cfg.model.get("path"):
        from skillax.models.registry import check_model_settings

        check_model_settings(cfg.model)  # e.g. model.max_len > max_position_embeddings: fail now
    return module.run(cfg, workdir)
