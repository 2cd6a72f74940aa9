"""SkillOS's config checks before a model loads (``skillax.config_check``): the method's own
validators and constants, called on the config alone."""

from __future__ import annotations


def check_config(cfg) -> None:
    """Raise ValueError for a SkillOS setting the run would reject later: r_cnt without a judge
    (``config.check_settings``), grouping, executor / judge kinds, sft.teacher, eval.conditions,
    executor.overlap, the RL clock."""
    from skillax.methods.common.clock import RLClock
    from skillax.methods.common.play import play_overlap
    from skillax.methods.skillos import evaluate as eval_lib
    from skillax.methods.skillos.config import EXECUTOR_KINDS, JUDGE_KINDS, SFT_TEACHERS, check_settings
    from skillax.methods.skillos.groups import GROUPINGS

    check_settings(cfg)
    for key, value, allowed in (("grouping", cfg.grouping, GROUPINGS), ("executor.kind", cfg.executor.kind, EXECUTOR_KINDS),
                                ("judge.kind", cfg.judge.kind, JUDGE_KINDS),
                                ("sft.teacher", cfg.sft.get("teacher", "rules"), SFT_TEACHERS)):
        if str(value) not in allowed:
            raise ValueError(f"{key} must be one of {allowed}, got {value!r}")
    eval_lib.conditions(cfg.eval)
    play_overlap(cfg.executor.get("overlap", 1))
    RLClock.from_config(cfg)


def row_budget(cfg) -> tuple[int, str]:
    """The longest curator row: its prompt budget plus one call's response, within the KV cache."""
    r = cfg.rollout
    need = int(r.max_prompt_tokens) + int(r.curator_tokens)
    if need <= int(cfg.model.max_len):
        return need, "rollout.max_prompt_tokens + rollout.curator_tokens"
    return int(cfg.model.max_len), "model.max_len, the sampler's prompt + response length"
