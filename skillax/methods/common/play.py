"""The play-loop settings of a method's policy, read from ``config.play``.

Lives in ``methods.common`` so that the method loops and the shared SFT warm start
(``methods.common.sft_warmstart``) both import it one way (it used to sit in
``methods.skill1.loop``, which imported ``sft_warmstart``, which imported it back).
"""

from __future__ import annotations

from skillax.agents.agent_loop import PlayConfig


def play_config(cfg, max_skills: int = 1) -> PlayConfig:
    """``PlayConfig`` from ``cfg.play`` (history_k, max_admissible, max_obs_chars,
    max_skill_chars, require_think, invalid_penalty, max_action_chars, think); ``max_skills`` skills injected
    (Skill1: the top-1 skill). Keys a config does not have keep ``PlayConfig``'s defaults."""
    p = cfg.play
    kw = dict(history_k=int(p.history_k), max_admissible=int(p.max_admissible),
              max_obs_chars=int(p.max_obs_chars), max_skill_chars=int(p.max_skill_chars),
              max_skills=int(max_skills))
    if "require_think" in p:
        kw["require_think"] = bool(p.require_think)
    if "invalid_penalty" in p:
        kw["invalid_penalty"] = float(p.invalid_penalty)
    if "max_action_chars" in p:
        kw["max_action_chars"] = int(p.max_action_chars)
    if "think" in p:
        kw["think"] = bool(p.think)
    return PlayConfig(**kw)


def play_overlap(value) -> int | str:
    """``play_episodes(overlap=...)`` from a config value (``rollout.overlap`` /
    ``executor.overlap``): 1 = lock-step, an int K >= 2 = overlapped, -1 or "auto" = "auto"
    (``skillax.agents.agent_loop.play_episodes``). Raises ValueError on anything else (0,
    -2, "fast", a bool)."""
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "auto":
            return "auto"
        try:
            value = int(v)
        except ValueError:
            raise ValueError(f"overlap must be an int >= 1, -1 or 'auto', got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"overlap must be an int >= 1, -1 or 'auto', got {value!r}")
    if value == -1:
        return "auto"
    if value < 1:
        raise ValueError(f"overlap must be an int >= 1, -1 or 'auto', got {value}")
    return value
