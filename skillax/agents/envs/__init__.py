"""Text environments and the batched runner.

Heavy modules (textworld, alfworld) are imported lazily: ``from skillax.agents.envs import
Task`` is cheap. Environments are named in :data:`ENV_REGISTRY` ("name" -> "module:attr");
:func:`env_spec` turns a name into a picklable :class:`EnvSpec` for :class:`EnvPool`.
Entries for environments written elsewhere (reasoning, webshop) are resolved only when used.
"""
from __future__ import annotations

import importlib
from typing import Any

from skillax.agents.envs.base import (INFO_KEYS, MAX_ACTION_CHARS, Env, EnvSpec, Task, cache_dir,
                                      check_action, normalize_action)

ENV_REGISTRY: dict[str, str] = {
    "alfworld": "skillax.agents.envs.alfworld:AlfWorldEnv",
    "textworld": "skillax.agents.envs.textworld_env:TextWorldEnv",
    "reasoning": "skillax.agents.envs.reasoning:ReasoningEnv",
    "webshop": "skillax.agents.envs.webshop:WebShopEnv",
}

_LAZY = {
    "EnvPool": "skillax.agents.envs.runner",
    "AlfWorldEnv": "skillax.agents.envs.alfworld",
    "load_alfworld_tasks": "skillax.agents.envs.alfworld",
    "stratified_sample": "skillax.agents.envs.alfworld",
    "AlfWorldDataError": "skillax.agents.envs.alfworld",
    "TextWorldEnv": "skillax.agents.envs.textworld_env",
    "make_textworld_tasks": "skillax.agents.envs.textworld_env",
    "default_textworld_tasks": "skillax.agents.envs.textworld_env",
    "expert_trajectory": "skillax.agents.envs.experts",
    "alfworld_experts": "skillax.agents.envs.experts",
    "ExpertRecord": "skillax.agents.envs.experts",
}


def env_spec(name: str, **kwargs: Any) -> EnvSpec:
    """EnvSpec for a registered environment name. Raises KeyError listing known names."""
    if name not in ENV_REGISTRY:
        raise KeyError(f"unknown environment {name!r}; known: {sorted(ENV_REGISTRY)}")
    return EnvSpec(ENV_REGISTRY[name], kwargs)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["INFO_KEYS", "MAX_ACTION_CHARS", "Env", "EnvSpec", "Task", "cache_dir", "check_action",
           "normalize_action", "ENV_REGISTRY", "env_spec", *_LAZY]
