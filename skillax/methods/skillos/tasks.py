"""SkillOS task sources: ALFWorld / TextWorld (through ``methods.common.tasks``) and reasoning.

Config keys (``config.env``):

* ``name``: ``"alfworld" | "textworld" | "reasoning" | "auto"``.
* ``tw_families``: TextWorld families to generate instead of the default four, as
  ``"challenge:key=value,key=value;challenge2"`` (e.g. ``"tw-treasure_hunter:level=5"``) or a
  named set (``"one_step"``; ``textworld_env.resolve_families``); ``tw_games_per_family`` games
  each (read by ``methods.common.tasks``). Splits map as in ``methods.common.tasks``
  (valid_train -> train seeds, valid_seen -> valid, valid_unseen -> test).
* reasoning: split ``"aime"`` loads AIME 2024/2025 from ``aime_dir`` (default
  ``<repo>/../shared/data/aime``); any other split generates reasoning-gym tasks
  (``rg_datasets`` comma list, default all topics; ``rg_per_dataset`` items each), grouped by
  topic (SkillOS's reasoning setting).
"""
from __future__ import annotations

import pathlib
import random

from skillax.agents.envs.base import Task
from skillax.agents.envs.textworld_env import parse_families  # noqa: F401  (re-exported; lives there now)
from skillax.methods.common import tasks as common_tasks


def env_name(env_cfg) -> str:
    name = str(env_cfg.name)
    return name if name == "reasoning" else common_tasks.resolve_env(name)


def load_tasks(env_cfg, split: str, limit: int | None = None) -> list[Task]:
    """Tasks of ``split`` for ``env_cfg`` (module docstring); ``limit`` keeps a seeded sample."""
    name = env_name(env_cfg)
    if name == "reasoning":
        tasks = _reasoning(env_cfg, split)
    else:  # ALFWorld / TextWorld (``tw_families`` is read there)
        return common_tasks.load_tasks(env_cfg, split, limit)
    if limit is not None and limit < len(tasks):
        tasks = sorted(random.Random(f"{split}-{limit}").sample(tasks, limit), key=lambda t: t.id)
    return tasks


def _reasoning(env_cfg, split: str) -> list[Task]:
    from skillax.agents.envs import reasoning

    if split == "aime":
        d = env_cfg.get("aime_dir") or str(pathlib.Path(__file__).resolve().parents[3].parent / "shared/data/aime")
        tasks = reasoning.load_aime(d, missing_ok=False)
        for t in tasks:   # AIME has no topic labels: one family, groups in seeded order
            t.attributes.setdefault("topic", "aime")
        return tasks
    names = [s.strip() for s in str(env_cfg.get("rg_datasets") or "").split(",") if s.strip()] or None
    return reasoning.reasoning_gym_tasks(names, n_per_dataset=int(env_cfg.get("rg_per_dataset", 8)), split=split)
