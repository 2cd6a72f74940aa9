"""Task-type-level skills written from expert trajectories (the SkillOS rule teacher's text).

A skill helps another game only if it does not describe one game's layout (issue 18: "take
fork 1 from countertop 3" cannot transfer). The rule teacher therefore writes one skill per
task type, with **X = the object named in the task** and **Y = the target receptacle**,
from the planner trajectories of the games of that type it has seen:

* what to find and where such objects were found (the places the planner took X from, most
  frequent first, over every game seen), and that a closed receptacle must be opened;
* the receptacle action of the type ("heat X with microwave", "cool X with fridge",
  "clean X with sinkbasin", "use desklamp" while holding X);
* where the object goes ("move X to Y").

:func:`procedure` turns one generalised action sequence into *units* (the planner never
wanders, so every "go to" belongs to the unit that follows it)::

    ("find",)            go to P [, open P], take X from P        places: P
    ("apply", verb, A)   [go to A,] heat|cool|clean X with A
    ("place",)           [go to Y, open Y,] move X to Y
    ("use", B)           [go to P,] use B                         places: P (where B stood)
    ("raw", text)        any other action, numbers removed, X / Y substituted

:class:`TypeKnowledge` keeps the first game's unit signature and, per unit, a counter of the
places seen in every later game with the same signature; :meth:`TypeKnowledge.render` gives
the (description, body) of the skill. A game whose goal names no object (TextWorld) has no
procedure (None): the teacher then falls back to the literal steps.
"""
from __future__ import annotations

import collections
import dataclasses
import re
from typing import Sequence

_NUM = re.compile(r"\s+\d+\b")
MAX_PLACES = 5
MAX_PATTERNS = 2


def generalise(action: str) -> str:
    """An action without instance numbers: ``"take egg 1 from countertop 2"`` -> ``"take egg from countertop"``."""
    return " ".join(_NUM.sub("", " " + action).split())


def _sub(text: str, obj: str, rec: str) -> str:
    """``obj`` -> X and ``rec`` -> Y as whole words (``rec`` only when given)."""
    text = re.sub(rf"\b{re.escape(obj)}\b", "X", text)
    return re.sub(rf"\b{re.escape(rec)}\b", "Y", text) if rec else text


def goal_pattern(goal: str, obj: str, rec: str) -> str:
    """``"put a hot egg in fridge"`` (egg, fridge) -> ``"put a hot X in Y"``."""
    return _sub(" ".join(goal.strip().lower().split()), obj, rec)


def procedure(actions: Sequence[str], obj: str, rec: str) -> tuple[list[tuple], list[str | None]] | None:
    """(units, places) of one expert action sequence (module docstring); ``places[k]`` is the
    place of unit k (find: where X was taken; use: where the lamp stood) or None. Returns None
    when ``obj`` is empty (no object to abstract)."""
    obj, rec = obj.strip().lower(), rec.strip().lower()
    if not obj:
        return None
    units: list[tuple] = []
    places: list[str | None] = []
    went: str | None = None
    for a in actions:
        g = generalise(a).lower()
        if not g:
            continue
        m = re.fullmatch(r"go to (.+)", g)
        if m:
            went = m.group(1)
            continue
        if re.fullmatch(r"open (.+)", g):
            continue                       # opening is part of the unit that follows
        m = re.fullmatch(rf"take {re.escape(obj)} from (.+)", g)
        if m:
            units.append(("find",))
            places.append(m.group(1))
        elif (m := re.fullmatch(rf"(heat|cool|clean) {re.escape(obj)} with (.+)", g)):
            units.append(("apply", m.group(1), m.group(2)))
            places.append(None)
        elif rec and re.fullmatch(rf"(?:move|put) {re.escape(obj)} (?:to|in|on|in/on) {re.escape(rec)}", g):
            units.append(("place",))
            places.append(None)
        elif (m := re.fullmatch(r"use (.+)", g)):
            units.append(("use", m.group(1)))
            places.append(went)
        else:
            units.append(("raw", _sub(g, obj, rec)))
            places.append(None)
        went = None
    return units, places


def _places_text(counter: collections.Counter, order: dict[str, int]) -> str:
    names = sorted(counter, key=lambda p: (-counter[p], order[p]))[:MAX_PLACES]
    if len(names) == 1:
        return f"the {names[0]}"
    return "the " + ", ".join(names[:-1]) + f" or {names[-1]}"


_FIND_LINE = re.compile(r"Find (?:the|another) X\.(?: In earlier games it was in or on the ([^.]+)\.)?")


def find_places(text: str) -> list[list[str]]:
    """The receptacle types each find step of a rendered skill names, in order (the inverse of
    :meth:`TypeKnowledge.render`'s "Find the X. In earlier games it was in or on the A, B or
    C."): ``[["a", "b", "c"]]``; ``[]`` for a find step without places; no find step: ``[]``.
    What the searching expert (:mod:`skillax.agents.envs.search_expert`) reads from a skill."""
    out = []
    for m in _FIND_LINE.finditer(text):
        names = m.group(1)
        out.append([n.strip() for n in re.split(r",\s*|\s+or\s+", names) if n.strip()] if names else [])
    return out


@dataclasses.dataclass
class TypeKnowledge:
    """What the teacher learnt about one task type (module docstring)."""

    family: str
    units: list[tuple]
    places: list[collections.Counter]
    patterns: list[str]
    first_seen: dict[str, int] = dataclasses.field(default_factory=dict)
    games: int = 0

    @classmethod
    def start(cls, family: str, goal: str, obj: str, rec: str, actions: Sequence[str]) -> "TypeKnowledge | None":
        """Knowledge from the first game of a type; None when the game has no object to abstract."""
        proc = procedure(actions, obj, rec)
        if proc is None:
            return None
        k = cls(family, proc[0], [collections.Counter() for _ in proc[0]], [])
        k.add(goal, obj, rec, actions)
        return k

    def add(self, goal: str, obj: str, rec: str, actions: Sequence[str]) -> bool:
        """Fold one more game in; True when the rendered skill changed (a new place or goal
        wording). A game whose unit signature differs from the first one's is ignored."""
        before = self.render()
        proc = procedure(actions, obj, rec)
        if proc is None or proc[0] != self.units:
            return False
        self.games += 1
        for c, p in zip(self.places, proc[1]):
            if p is not None:
                c[p] += 1
                self.first_seen.setdefault(p, len(self.first_seen))
        pat = goal_pattern(goal, obj, rec)
        if pat not in self.patterns and len(self.patterns) < MAX_PATTERNS:
            self.patterns.append(pat)
        return self.render() != before

    def render(self) -> tuple[str, str]:
        """(description, body) of the skill (module docstring)."""
        has_y = any(u[0] == "place" for u in self.units)
        kind = self.family.replace("_", " ")
        pats = " or ".join(f'"{p}"' for p in self.patterns)
        desc = f"How to do {kind} tasks, like {pats}." if pats else f"How to do {kind} tasks."
        lines = ["X = the object named in the task" + (", Y = the receptacle it must go to." if has_y else ".")]
        finds = 0
        for u, c in zip(self.units, self.places):
            n = len(lines)
            if u[0] == "find":
                what = "the X" if finds == 0 else "another X"
                finds += 1
                where = f" In earlier games it was in or on {_places_text(c, self.first_seen)}." if c else ""
                lines.append(f"{n}. Find {what}.{where} Go there, open it if it is closed, and take it "
                             f'("take X from ...").')
            elif u[0] == "apply":
                lines.append(f'{n}. Go to the {u[2]} and {u[1]} the X ("{u[1]} X with {u[2]}").')
            elif u[0] == "place":
                lines.append(f'{n}. Go to the Y, open it if it is closed, and put the X there ("move X to Y").')
            elif u[0] == "use":
                where = f" (in earlier games it stood on {_places_text(c, self.first_seen)})" if c else ""
                lines.append(f'{n}. Holding the X, go to the {u[1]}{where} and turn it on ("use {u[1]}").')
            else:
                lines.append(f"{n}. {u[1]}")
        return desc, "\n".join(lines)


def teacher_row(task, actions: Sequence[str]) -> tuple[str, str, str, list[str]]:
    """One game as :func:`type_skill` reads it: (goal, object, receptacle, expert actions) of an
    ALFWorld :class:`~skillax.agents.envs.base.Task` (its ``attributes``; "" where absent)."""
    return (task.goal, str(task.attributes.get("object") or ""), str(task.attributes.get("receptacle") or ""),
            list(actions))


def type_skill(family: str, games: Sequence[tuple[str, str, str, Sequence[str]]]) -> tuple[str, str] | None:
    """(description, body) of the skill for ``family`` from ``games`` = (goal, object,
    receptacle, expert actions) in order (the first fixes the procedure); None when the first
    game has no object to abstract or ``games`` is empty."""
    if not games:
        return None
    k = TypeKnowledge.start(family, *games[0])
    if k is None:
        return None
    for g in games[1:]:
        k.add(*g)
    return k.render()
