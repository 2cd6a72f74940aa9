"""Skill1's config checks before a model loads (``skillax.config_check``): the loop's own
constructors and validators, called on the config alone."""

from __future__ import annotations


def check_config(cfg) -> None:
    """Raise ValueError for a Skill1 setting the run would reject later: ablation, objective,
    rollout (distil_parse_fail, overlap), library.count_mode / eviction / token_budget,
    the RL clock, eval.splits."""
    from skillax.methods.common.clock import RLClock
    from skillax.methods.common.eval_io import eval_splits
    from skillax.methods.skill1 import loop
    from skillax.methods.skill1 import objectives as obj_lib
    from skillax.methods.skill1.rollout import COUNT_MODES
    from skillax.skills.budget import check_budget
    from skillax.skills.library import EVICTIONS

    loop.ablation(cfg)
    loop.rollout_config(cfg)
    obj_lib.objective_configs(cfg)
    count_mode = str(cfg.library.get("count_mode", "selected"))
    if count_mode not in COUNT_MODES:
        raise ValueError(f"library.count_mode must be one of {COUNT_MODES}, got {count_mode!r}")
    if str(cfg.library.eviction) not in EVICTIONS:
        raise ValueError(f"library.eviction must be one of {EVICTIONS}, got {cfg.library.eviction!r}")
    check_budget(int(cfg.library.get("token_budget", 0)))
    RLClock.from_config(cfg)
    if not eval_splits(cfg):
        raise ValueError("eval.splits names no split")


def row_budget(cfg) -> tuple[int, str]:
    """The longest rollout row a Skill1 step can train: every stage's row (query, rerank, play,
    distil) is a prompt + completion sampled within the KV cache, so at most ``model.max_len``."""
    return int(cfg.model.max_len), "model.max_len, the sampler's prompt + response length"
