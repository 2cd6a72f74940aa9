"""Per-episode evaluation records: the unit that makes arms comparable game by game.

Every method's held-out evaluation writes one :class:`EpisodeRecord` per (game, condition)
as a JSON line (``<workdir>/eval/<condition>__<split>.jsonl``). Two arms are *paired* when
they evaluated the same ``task_id`` s; :func:`skillax.evaluation.stats.paired_delta` joins
them on ``task_id``.

Fields: ``task_id`` (the env's task id, e.g. ``valid_unseen/<game_id>``), ``split``,
``task_type`` (ALFWorld type, TextWorld family, ...), ``won`` (bool), ``steps`` (game steps
played), ``invalid_actions`` (format-invalid steps), ``failed`` (the environment errored:
counted as a loss, never dropped), ``retrieved`` (skills put in context; -1 when the
condition has no retrieval), ``extras`` (method-specific scalars, e.g. the chosen skill id).
From a trajectory also (since 2026-12-05, :func:`trajectory_fields`; older files read
with ``env_invalid = None``, "not recorded"): ``invalid_reasons`` ({reason of
``agents.agent_loop.parse_action``: steps}; a "missing_think" step still plays its action,
the other reasons play an empty action), ``env_invalid`` (steps the environment did not
accept: empty, too long or not admissible -- so it includes the format failures that played
an empty action; the two counts overlap) and ``first_response`` (the first step's raw
policy text, at most :data:`RESPONSE_CHARS` characters). Campaign 15's GRPO arm evaluated
with every step format-invalid and 84 of 134 games won, and its records could not say what
it wrote. Since 2026-12-06 also ``first_invalid`` ({"step", "reason", "response"} of the
episode's first format-invalid step, the response cut the same way; None when every step
parsed): campaign 16h's GRPO after RL step 12 lost the action tag in 118 of 134 games while
every first response parsed, so ``first_response`` could not show what it wrote instead.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from typing import Any, Iterable

ALFWORLD_TYPE_SHORT = {
    "pick_and_place_simple": "Pick", "look_at_obj_in_light": "Look",
    "pick_clean_then_place_in_recep": "Clean", "pick_heat_then_place_in_recep": "Heat",
    "pick_cool_then_place_in_recep": "Cool", "pick_two_obj_and_place": "Pick2",
}
RESPONSE_CHARS = 400


@dataclasses.dataclass
class EpisodeRecord:
    """One evaluated episode (module docstring)."""

    task_id: str
    split: str
    task_type: str
    won: bool
    steps: int
    invalid_actions: int = 0
    failed: bool = False
    retrieved: int = -1
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)
    invalid_reasons: dict[str, int] = dataclasses.field(default_factory=dict)
    env_invalid: int | None = None
    first_response: str = ""
    first_invalid: dict[str, Any] | None = None

    def __post_init__(self):
        if not self.task_id:
            raise ValueError("EpisodeRecord needs a task_id")
        if int(self.steps) < 0 or int(self.invalid_actions) < 0:
            raise ValueError(f"negative steps/invalid_actions in {self.task_id}: {self.steps}, {self.invalid_actions}")
        self.won, self.failed = bool(self.won), bool(self.failed)
        self.steps, self.invalid_actions, self.retrieved = int(self.steps), int(self.invalid_actions), int(self.retrieved)
        self.invalid_reasons = {str(k): int(v) for k, v in (self.invalid_reasons or {}).items()}
        if sum(self.invalid_reasons.values()) > self.invalid_actions or min(self.invalid_reasons.values(), default=0) < 0:
            raise ValueError(f"invalid_reasons {self.invalid_reasons} of {self.task_id} do not fit its "
                             f"{self.invalid_actions} invalid actions")
        if self.env_invalid is not None:
            self.env_invalid = int(self.env_invalid)
            if not 0 <= self.env_invalid <= self.steps:
                raise ValueError(f"env_invalid {self.env_invalid} of {self.task_id} outside [0, {self.steps} steps]")

    @property
    def short_type(self) -> str:
        """ALFWorld's table names (Pick, Look, Clean, Heat, Cool, Pick2); other types as is."""
        return ALFWORLD_TYPE_SHORT.get(self.task_type, self.task_type)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "EpisodeRecord":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    @classmethod
    def from_trajectory(cls, task, trajectory, retrieved: int = -1, **extras) -> "EpisodeRecord":
        """From an :class:`~skillax.agents.envs.base.Task` and an
        :class:`~skillax.agents.agent_loop.Trajectory` (a failed env counts as a loss)."""
        won = bool(trajectory.won) and not bool(trajectory.failed)
        return cls(task_id=task.id, split=task.split, task_type=task.family, won=won,
                   steps=trajectory.n_steps, invalid_actions=trajectory.n_invalid,
                   failed=bool(trajectory.failed), retrieved=retrieved, extras=dict(extras),
                   **trajectory_fields(trajectory))


def trajectory_fields(trajectory) -> dict:
    """{"invalid_reasons", "env_invalid", "first_response", "first_invalid"} of an
    :class:`~skillax.agents.agent_loop.Trajectory` (module docstring): format-invalid steps
    by reason ("unknown" where a step has none), steps the environment rejected, the first
    step's response cut to :data:`RESPONSE_CHARS` characters ("" for an episode without steps),
    and the first format-invalid step as {"step": 0-based index, "reason", "response"} (None
    when there is none)."""
    reasons: dict[str, int] = {}
    first_invalid = None
    for i, st in enumerate(trajectory.steps):
        if not st.valid:
            why = st.invalid_reason or "unknown"
            reasons[why] = reasons.get(why, 0) + 1
            if first_invalid is None:
                first_invalid = {"step": i, "reason": why, "response": st.response[:RESPONSE_CHARS]}
    return {"invalid_reasons": dict(sorted(reasons.items())),
            "env_invalid": sum(bool(s.env_invalid) for s in trajectory.steps),
            "first_response": trajectory.steps[0].response[:RESPONSE_CHARS] if trajectory.steps else "",
            "first_invalid": first_invalid}


def write_records(path: str | os.PathLike, records: Iterable[EpisodeRecord]) -> pathlib.Path:
    """Write records as JSON lines (atomically: a reader never sees half a file).

    Raises ValueError when two records share a ``task_id`` (one episode per game per arm)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    recs = list(records)
    ids = [r.task_id for r in recs]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:3]
        raise ValueError(f"{path}: duplicate task_id(s) {dup}: one episode per game per arm")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r.to_dict(), sort_keys=True) + "\n" for r in recs), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_records(path: str | os.PathLike) -> list[EpisodeRecord]:
    """Read a records file; raises ValueError naming the file and line on a bad line."""
    out = []
    for n, line in enumerate(pathlib.Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(EpisodeRecord.from_dict(json.loads(line)))
        except (json.JSONDecodeError, TypeError, ValueError) as e:
            raise ValueError(f"{path}: line {n}: not an episode record ({e})") from None
    return out
