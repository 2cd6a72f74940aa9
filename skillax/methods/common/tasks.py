"""Task sources for the method loops: which environment, which split, a seeded stream.

``env.name``: ``"textworld"`` (generated games; the embedded default when ../shared is
absent), ``"alfworld"`` (the ../shared pack or an ``alfworld-download`` layout), or
``"auto"`` (ALFWorld when its data is found, else TextWorld).

``"webshop"`` is refused with the reason (issue 19, blocked on data): the adapter
(``agents.envs.webshop``: ``webshop_tasks`` goal indices, ``WebShopEnv`` over HTTP) needs a
running WebShop server built from WebShop's product data, goal list and search index, and
none of it is under ../shared/data (nor reachable from the GPU machine). Its tasks carry no
goal text until the server answers (Skill1 writes its query from the goal before play;
SkillOS groups tasks by goal attributes), so wiring the loaders to the test's loopback
server would train and evaluate on made-up goals only.
"""

from __future__ import annotations

import random
from typing import Sequence

from skillax.agents.envs.base import Task
from skillax.rl.data import make_iterator, task_dataset


WEBSHOP_BLOCKED = ("env.name='webshop' is not wired into the method task loaders (issue 19, blocked on data): "
                   "they need a WebShop server built from WebShop's products, goals and search index, and "
                   "none of it is under ../shared/data; agents.envs.webshop.WebShopEnv plays a running "
                   "server directly")


def resolve_env(name: str) -> str:
    if name != "auto":
        return name
    from skillax.agents.envs.alfworld import default_data_dir

    d = default_data_dir()
    return "alfworld" if d else "textworld"


def load_tasks(env_cfg, split: str, limit: int | None = None) -> list[Task]:
    """Tasks of ``split`` for the configured environment (first ``limit`` after a seeded
    shuffle when ``limit`` is set, so a small run still covers several families/types)."""
    name = resolve_env(env_cfg.name)
    if name == "textworld":
        from skillax.agents.envs.textworld_env import family_seeds, make_textworld_tasks, resolve_families

        tw_split = {"valid_train": "train", "valid_seen": "valid", "valid_unseen": "test"}.get(split, split)
        games = family_seeds(int(env_cfg.get("tw_games_per_family", 4)), tw_split,
                             resolve_families(env_cfg.get("tw_families") or ""))
        if limit is not None and limit < len(games):
            # the same draw as sampling the generated tasks (below), but only the kept games are
            # generated (1-5 s each: an evaluation of 2 tasks no longer generates all of them)
            games = random.Random(f"{split}-{limit}").sample(games, limit)
            return sorted((make_textworld_tasks(ch, st, [seed], tw_split)[0] for ch, st, seed in games),
                          key=lambda t: t.id)
        tasks = [make_textworld_tasks(ch, st, [seed], tw_split)[0] for ch, st, seed in games]
    elif name == "alfworld":
        from skillax.agents.envs.alfworld import load_alfworld_tasks

        tasks = load_alfworld_tasks(env_cfg.get("data_dir") or None, splits=[split])
    elif name == "webshop":
        raise ValueError(WEBSHOP_BLOCKED)
    else:
        raise ValueError(f"env.name must be 'textworld', 'alfworld' or 'auto', got {env_cfg.name!r}")
    if limit is not None and limit < len(tasks):
        rng = random.Random(f"{split}-{limit}")
        tasks = sorted(rng.sample(tasks, limit), key=lambda t: t.id)
    return tasks


class TaskStream:
    """Seeded, repeating stream of tasks (grain) whose position goes into checkpoints.

    ``peek(n)`` shows the next ``n`` tasks without consuming them (Skill1 starts the next
    step's game resets behind the current update: ``rollout.prefetch_resets``); ``take``
    returns peeked tasks first, and ``get_state`` is the position before any peeked task, so a
    checkpoint written while tasks are peeked resumes at the same task.
    """

    def __init__(self, tasks: Sequence[Task], seed: int):
        if not tasks:
            raise ValueError("TaskStream needs at least one task")
        self.tasks = list(tasks)
        self._it = make_iterator(task_dataset(list(range(len(self.tasks))), seed=seed))
        self._ahead: list[tuple[object, int]] = []    # (iterator state before it, task index)

    def _next(self) -> int:
        return self._ahead.pop(0)[1] if self._ahead else int(next(self._it))

    def take(self, n: int) -> list[Task]:
        return [self.tasks[self._next()] for _ in range(n)]

    def peek(self, n: int) -> list[Task]:
        while len(self._ahead) < n:
            state = self._it.get_state()
            self._ahead.append((state, int(next(self._it))))
        return [self.tasks[i] for _, i in self._ahead[:n]]

    def get_state(self):
        return self._ahead[0][0] if self._ahead else self._it.get_state()

    def set_state(self, state) -> None:
        self._ahead.clear()
        self._it.set_state(state)
