"""Skill1's ``objective="released_code"`` preset: the public code's settings beside its objective
(``skillax.methods.skill1.objectives``, module docstring point 5). Imports no JAX, so
``--config.mode=show`` prints the config a run would use."""

from __future__ import annotations

RELEASED_CODE_PRESET = {"rollout.top_k": 3, "rl.kl_coef": 0.01, "rl.kl_estimator": "k3",
                        "play.invalid_penalty": 0.1}


def objective_preset(cfg) -> dict[str, tuple]:
    """What :func:`apply_objective_preset` does to ``cfg``: {key: (value now, preset value,
    applied)} for each :data:`RELEASED_CODE_PRESET` key when ``objective="released_code"``
    ({} otherwise). ``applied`` is True where the value is still Skill1's default
    (``config_defaults.skill1``); a value set to anything else, by a config file or a
    ``--config`` override, is kept (until session 28 the preset overwrote it silently: campaign
    17's rc arm asked for ``rl.kl_coef=0.05`` and trained with 0.01)."""
    if cfg.get("objective") != "released_code":
        return {}
    from skillax import config_defaults

    default = config_defaults.skill1()
    out = {}
    for dotted, v in RELEASED_CODE_PRESET.items():
        sec, key = dotted.split(".")
        now = cfg[sec][key]
        out[dotted] = (now, v, now == default[sec][key])
    return out


def apply_objective_preset(cfg):
    """``objective="released_code"`` implies the public code's K = 3, k3 KL 0.01 and
    invalid-action penalty 0.1 (``methods.skill1.objectives``, point 5) for each of those keys still at Skill1's
    default; a value set otherwise wins (:func:`objective_preset`; the run prints both).
    Returns an unlocked copy of ``cfg`` with references resolved."""
    cfg = cfg.copy_and_resolve_references()
    with cfg.unlocked():
        for dotted, (_, v, applied) in objective_preset(cfg).items():
            if applied:
                sec, key = dotted.split(".")
                cfg[sec][key] = v
    return cfg


def preset_lines(cfg) -> list[str]:
    """One line per preset key for the run's log: set by the preset, or kept (explicit)."""
    return [f"objective released_code: {k} = {v!r} (preset)" if applied else
            f"objective released_code: {k} = {now!r} kept (set explicitly; the preset's value is {v!r})"
            for k, (now, v, applied) in objective_preset(cfg).items()]
