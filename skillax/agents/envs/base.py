"""The environment protocol every skillax text environment follows (pure Python, no jax).

A *task* is one playable instance (one ALFWorld game, one generated TextWorld game, one
reasoning question). An *environment* plays a task through the gym-like pair

    reset(task)    -> (observation: str, info: dict)
    step(action)   -> (observation: str, reward: float, done: bool, info: dict)

``info`` always carries the keys of :data:`INFO_KEYS`:

* ``won`` (bool): the task is solved (ALFWorld / TextWorld ``won``; success = ``won``);
* ``admissible_commands`` (list[str]): the actions the game accepts now (may be empty for
  free-form environments such as question answering);
* ``step`` (int): number of ``step`` calls made in this episode (0 after reset);
* ``invalid`` (bool): the last action was empty, longer than :data:`MAX_ACTION_CHARS`
  characters, or not admissible. The game still advances as the real environment does
  (ALFWorld answers "Nothing happens.") and the step is counted.

Optional keys environments may add: ``invalid_reason`` (str | None), ``truncated`` (bool,
step cap reached), ``lost``, ``score``, ``max_score``, ``expert_plan`` (list[str]),
``failed`` (bool) and ``fail_reason`` (str) when the episode ended because the game process
crashed or timed out (set by :mod:`skillax.agents.envs.runner`).

Environments are built in worker processes from a picklable :class:`EnvSpec`
("module:attr" + kwargs), so nothing unpicklable crosses process boundaries.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Protocol, runtime_checkable

INFO_KEYS = ("won", "admissible_commands", "step", "invalid")
MAX_ACTION_CHARS = 256  # longer actions are never sent to a game engine (counted invalid)

INVALID_EMPTY = "empty"
INVALID_TOO_LONG = "too_long"
INVALID_NOT_STRING = "not_a_string"
INVALID_NOT_ADMISSIBLE = "not_admissible"


@dataclasses.dataclass
class Task:
    """One playable task.

    Attributes:
      id: unique id within its environment, e.g. ``"valid_seen/look_at_obj_in_light-.../trial_..."``.
      env: environment name in :data:`skillax.agents.envs.ENV_REGISTRY` (``"alfworld"``,
        ``"textworld"``, ...).
      family: grouping key of related tasks (ALFWorld: the task type; TextWorld: challenge +
        settings). SkillOS samples task groups from one family (DESIGN §1.2).
      goal: the task sentence shown to the agent (no trailing full stop needed).
      split: data split (``valid_seen``, ``valid_unseen``, ``valid_train``, ``train``, ...).
      attributes: finer grouping attributes (ALFWorld: ``task_type``, ``objects``,
        ``receptacles`` parsed from the goal). Values are str or list[str].
      payload: whatever the environment needs to build the game (problem text, seed, ...).
    """

    id: str
    env: str
    family: str
    goal: str
    split: str = "train"
    attributes: dict[str, Any] = dataclasses.field(default_factory=dict)
    payload: dict[str, Any] = dataclasses.field(default_factory=dict)

    def group_key(self, keys: tuple[str, ...] = ()) -> str:
        """Return a grouping string: ``family`` plus the named ``attributes`` (lists sorted).

        ``group_key()`` groups by family only; ``group_key(("objects",))`` additionally
        separates tasks about different objects. Raises KeyError on an unknown attribute.
        """
        parts = [self.family]
        for k in keys:
            v = self.attributes[k]
            parts.append(f"{k}=" + (",".join(sorted(v)) if isinstance(v, (list, tuple)) else str(v)))
        return "|".join(parts)


@runtime_checkable
class Env(Protocol):
    """A text environment (see module docstring for the info keys)."""

    max_steps: int

    def reset(self, task: Task) -> tuple[str, dict]:
        ...

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        ...

    def close(self) -> None:
        ...


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Picklable recipe for an environment: ``target`` is ``"package.module:Attr"`` naming a
    class or factory function, called as ``Attr(**kwargs)``.

    Example: ``EnvSpec("skillax.agents.envs.alfworld:AlfWorldEnv", {"max_steps": 50})``.
    """

    target: str
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def build(self) -> Env:
        """Import the target and call it. Raises ValueError on a malformed target string."""
        if ":" not in self.target:
            raise ValueError(f"EnvSpec target must look like 'module:attr', got {self.target!r}")
        mod_name, attr = self.target.split(":", 1)
        fn = getattr(importlib.import_module(mod_name), attr)
        return fn(**dict(self.kwargs))


def normalize_action(action: str) -> str:
    """Canonical form used to compare an action with the admissible list: whitespace
    collapsed, ends stripped, one trailing full stop dropped, lower-cased (ALFWorld and
    TextWorld commands are lower-case and their parsers are case-insensitive)."""
    a = " ".join(action.split())
    if a.endswith("."):
        a = a[:-1].rstrip()
    return a.lower()


def check_action(action: Any, admissible: list[str] | None,
                 max_chars: int = MAX_ACTION_CHARS) -> tuple[str, str | None]:
    """Validate an action against the current admissible list.

    Args:
      action: the agent's action (anything; non-strings are invalid).
      admissible: admissible commands, or None when the environment has no fixed list
        (then only emptiness and length are checked).
      max_chars: length cap in characters, measured before normalisation.

    Returns:
      (normalized_action, invalid_reason). ``invalid_reason`` is None for a valid action,
      else one of ``"not_a_string"``, ``"empty"``, ``"too_long"``, ``"not_admissible"``.
      For the first three the normalized action is ``""`` and must not reach a game engine.
    """
    if not isinstance(action, str):
        return "", INVALID_NOT_STRING
    if len(action) > max_chars:
        return "", INVALID_TOO_LONG
    a = normalize_action(action)
    if not a:
        return "", INVALID_EMPTY
    if admissible is not None and a not in {normalize_action(c) for c in admissible}:
        return a, INVALID_NOT_ADMISSIBLE
    return a, None


def cache_dir(sub: str = "") -> str:
    """Directory for generated game files and expert caches: ``$SKILLAX_CACHE`` if set, else
    ``~/.cache/skillax`` (never the repository). Created on demand; ``sub`` is appended."""
    import os

    root = os.environ.get("SKILLAX_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "skillax")
    path = os.path.join(root, sub) if sub else root
    os.makedirs(path, exist_ok=True)
    return path


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file + ``os.replace`` so that workers
    generating the same file concurrently never see a partial file."""
    import os
    import tempfile

    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path: str, required: tuple[str, ...] = ()) -> Any:
    """Load a JSON file; raise ValueError naming the file when it is not valid JSON or
    (for an object) lacks one of ``required`` keys."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}); delete it to regenerate") from None
    missing = [k for k in required if not isinstance(obj, dict) or k not in obj]
    if missing:
        raise ValueError(f"{path}: missing field(s) {missing}; delete it to regenerate")
    return obj
