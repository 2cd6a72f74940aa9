"""SkillOS task groups: related tasks in a sequence, so later tasks judge earlier curation.

SkillOS (Algorithm 1; DESIGN.md §1.2) trains on *task groups* G = (x_1 .. x_|G|): tasks
clustered by skill-relevant attributes (the paper tags each task with Gemini-2.5-Pro labels
Z_i and groups by attribute similarity). We use the attributes the environments already
parse, so no labelling model is needed:

* ALFWorld: the task type (``family``) and the objects / receptacles of the goal
  (``attributes["objects"]``, ``attributes["receptacles"]``, parsed from the templated goal);
* reasoning: the topic (``family``) and the generator (``attributes["dataset"]``);
* TextWorld: the family (challenge + settings), which already fixes the game kind.

Clustering (:func:`attribute_groups`), deterministic in ``seed``:

1. tasks are split by ``family`` (a group never mixes task types/topics);
2. within a family the tasks are visited in a seeded random order; the first unassigned task
   is the group's *anchor*, and the ``size - 1`` unassigned tasks with the highest Jaccard
   similarity of their attribute sets to the anchor's join it (ties: the seeded order). The
   group's order is anchor first, then by decreasing similarity (ties: the seeded order);
3. a family's last group may be smaller; groups with fewer than ``min_size`` tasks are dropped.

The attribute set of a task is ``{"key=value"}`` over :data:`ATTRIBUTE_KEYS` of its
environment (list values give one element each). The paper's ablation "w/o grouping"
(:func:`random_groups`) chunks one seeded permutation of all tasks, ignoring families.

:class:`GroupStream` yields groups forever in a seeded order (grain, reshuffled each epoch)
and exposes the iterator state for checkpoints.
"""
from __future__ import annotations

import dataclasses
import random
from typing import Iterable, Sequence

from skillax.agents.envs.base import Task

#: Attribute keys compared when clustering, per environment (others: none -> family only).
ATTRIBUTE_KEYS: dict[str, tuple[str, ...]] = {
    "alfworld": ("task_type", "objects", "receptacles"),
    "reasoning": ("topic", "dataset"),
    "textworld": ("challenge",),
    "webshop": (),
}
GROUPINGS = ("attributes", "random")


@dataclasses.dataclass(frozen=True)
class TaskGroup:
    """An ordered sequence of related tasks; ``key`` names how it was formed."""

    index: int
    key: str
    tasks: tuple[Task, ...]

    def __len__(self) -> int:
        return len(self.tasks)

    @property
    def task_ids(self) -> list[str]:
        return [t.id for t in self.tasks]


def attribute_set(task: Task, keys: Sequence[str] | None = None) -> frozenset[str]:
    """``{"key=value"}`` over ``keys`` (default :data:`ATTRIBUTE_KEYS` of ``task.env``); a
    missing key is skipped, list values contribute one element per item (lower-cased)."""
    keys = ATTRIBUTE_KEYS.get(task.env, ()) if keys is None else keys
    out = set()
    for k in keys:
        v = task.attributes.get(k)
        if v is None or v == "":
            continue
        for item in (v if isinstance(v, (list, tuple)) else [v]):
            out.add(f"{k}={str(item).strip().lower()}")
    return frozenset(out)


def jaccard(a: frozenset, b: frozenset) -> float:
    """|a ∩ b| / |a ∪ b|; 1.0 for two empty sets (identical, nothing distinguishes them)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _check(size: int, min_size: int) -> None:
    if size < 1:
        raise ValueError(f"group size must be >= 1, got {size}")
    if not 1 <= min_size <= size:
        raise ValueError(f"min_size must be in [1, size={size}], got {min_size}")


def attribute_groups(tasks: Sequence[Task], size: int, *, seed: int = 0, min_size: int = 2,
                     keys: Sequence[str] | None = None) -> list[TaskGroup]:
    """Cluster ``tasks`` into groups of up to ``size`` related tasks (module docstring).

    Args:
      tasks: tasks to group (ids must be unique).
      size: tasks per group (|G|). min_size: smaller leftover groups are dropped.
      seed: the only source of randomness (same seed + tasks -> same groups, any order of input).
      keys: attribute keys to compare (default per environment, :data:`ATTRIBUTE_KEYS`).
    Returns:
      groups ordered by (family, formation order); ``index`` is the position in that list.
    Raises:
      ValueError: bad sizes or duplicate task ids.
    """
    _check(size, min_size)
    tasks = _unique_sorted(tasks)
    by_family: dict[str, list[Task]] = {}
    for t in tasks:
        by_family.setdefault(t.family, []).append(t)
    out: list[TaskGroup] = []
    for fam in sorted(by_family):
        members = by_family[fam]
        random.Random(f"{seed}|{fam}").shuffle(members)
        order = {t.id: i for i, t in enumerate(members)}
        attrs = {t.id: attribute_set(t, keys) for t in members}
        left = list(members)
        while left:
            anchor, rest = left[0], left[1:]
            rest.sort(key=lambda t: (-jaccard(attrs[anchor.id], attrs[t.id]), order[t.id]))
            chosen = [anchor] + rest[: size - 1]
            taken = {t.id for t in chosen}
            left = [t for t in left if t.id not in taken]
            if len(chosen) >= min_size:
                out.append(TaskGroup(len(out), fam, tuple(chosen)))
    return out


def random_groups(tasks: Sequence[Task], size: int, *, seed: int = 0, min_size: int = 2) -> list[TaskGroup]:
    """Ablation "w/o grouping": one seeded permutation of all tasks cut into chunks of ``size``
    (families mixed); a last chunk under ``min_size`` is dropped."""
    _check(size, min_size)
    tasks = _unique_sorted(tasks)
    random.Random(f"{seed}|random").shuffle(tasks)
    out = []
    for j in range(0, len(tasks), size):
        chunk = tuple(tasks[j:j + size])
        if len(chunk) >= min_size:
            out.append(TaskGroup(len(out), "random", chunk))
    return out


def make_groups(tasks: Sequence[Task], size: int, *, grouping: str = "attributes", seed: int = 0,
                min_size: int = 2) -> list[TaskGroup]:
    """Dispatch on ``grouping`` in :data:`GROUPINGS`. Raises ValueError when no group results."""
    if grouping == "attributes":
        groups = attribute_groups(tasks, size, seed=seed, min_size=min_size)
    elif grouping == "random":
        groups = random_groups(tasks, size, seed=seed, min_size=min_size)
    else:
        raise ValueError(f"grouping must be one of {GROUPINGS}, got {grouping!r}")
    if not groups:
        raise ValueError(f"no task group of >= {min_size} tasks could be formed from {len(tasks)} tasks")
    return groups


def _unique_sorted(tasks: Iterable[Task]) -> list[Task]:
    tasks = sorted(tasks, key=lambda t: t.id)
    for a, b in zip(tasks, tasks[1:]):
        if a.id == b.id:
            raise ValueError(f"duplicate task id {a.id!r}")
    return tasks


class GroupStream:
    """Seeded, repeating stream of groups (grain; reshuffled each epoch); state for checkpoints."""

    def __init__(self, groups: Sequence[TaskGroup], seed: int):
        from skillax.rl.data import make_iterator, task_dataset

        if not groups:
            raise ValueError("GroupStream needs at least one group")
        self.groups = list(groups)
        self._it = make_iterator(task_dataset(list(range(len(self.groups))), seed=seed))

    def take(self, n: int) -> list[TaskGroup]:
        return [self.groups[int(next(self._it))] for _ in range(n)]

    def get_state(self) -> dict:
        return self._it.get_state()

    def set_state(self, state: dict) -> None:
        self._it.set_state(state)
