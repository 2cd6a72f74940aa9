"""Skill-alpha's config checks before a model loads (``skillax.config_check``): the loop's own
constructors and validators, called on the config alone."""

from __future__ import annotations

STAGES = ("train", "infer", "sft_data")        # loop.run's stages
SETTINGS = ("experience", "document", "reasoning")


def check_config(cfg) -> None:
    """Raise ValueError for a Skill-alpha setting the run would reject later: stage, setting,
    the unit (``loop.unit_config``: carry, reward, actions, token budget), evidence order /
    source / sequence, worker / judge kinds, eval.conditions, play.overlap, the RL clock."""
    from skillax.methods.common.clock import RLClock
    from skillax.methods.common.play import play_overlap
    from skillax.methods.skill_alpha import evidence_stream as es
    from skillax.methods.skill_alpha.evaluate import eval_conditions
    from skillax.methods.skill_alpha.loop import unit_config
    from skillax.methods.skill_alpha.objectives import training_rows

    if str(cfg.stage) not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {cfg.stage!r}")
    if str(cfg.setting) not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {cfg.setting!r}")
    unit_config(cfg)
    training_rows([], str(cfg.unit.get("zero_variance", "keep")))
    e = cfg.evidence
    for key, value, allowed in (("evidence.order", e.get("order", "round_robin"), es.ORDERS),
                                ("evidence.source", e.get("source", "worker"), es.SOURCES),
                                ("evidence.sequence", e.get("sequence", "source"), es.SEQUENCES),
                                ("worker.kind", cfg.worker.kind, ("frozen", "openai")),
                                ("judge.kind", cfg.judge.kind, ("worker", "openai"))):
        if str(value) not in allowed:
            raise ValueError(f"{key} must be one of {allowed}, got {value!r}")
    eval_conditions(cfg)
    play_overlap(cfg.play.get("overlap", 1))
    RLClock.from_config(cfg)


def row_budget(cfg) -> tuple[int, str]:
    """The longest editor row: ``loop.unit_config``'s prompt budget (min(evidence.max_prompt_tokens,
    model.max_len - unit.max_new_tokens)) plus the response."""
    u = cfg.unit
    prompt = min(int(cfg.evidence.max_prompt_tokens), int(cfg.model.max_len) - int(u.max_new_tokens))
    return prompt + int(u.max_new_tokens), "the editor's prompt budget + unit.max_new_tokens"
