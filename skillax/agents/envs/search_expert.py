"""A searching ALFWorld expert: it does not know where the object is, it looks for it.

The PDDL planner (:mod:`skillax.agents.envs.experts`) knows the whole state: its first action
is ``go to`` the receptacle that holds the object. A reader SFT'd to imitate it learns to
*guess* the object's place from nothing it can see, and a skill that says where such objects
usually are changes none of its demonstrations -- so the SFT teaches the reader to ignore
skills (campaign 4, ``benchmarks/results/learning/campaign_2026-12-01d``). This expert plays
the planner's plan except for its *find* units (``go to P [, open P], take X from P``), which
it replaces by a search over the room's receptacles in a **search order**:

* without a skill: every receptacle by type name, then number (``cabinet 1``, ``cabinet 2``,
  …, ``countertop 1``, …) -- the order a reader can recompute from the ``go to`` actions of
  every step's admissible list;
* with a skill that names places (``"In earlier games it was in or on the countertop,
  drawer or cabinet."``, :func:`skillax.methods.skillos.type_skills.find_places`): the
  receptacles of those types first, in the skill's order, then the rest as above.

At each receptacle of the order it goes there, opens it when it is closed, and takes the first
instance of the object's type it sees (a remembered one first: a Pick Two search goes back to
where it saw a second instance). Later plan actions name the instance it took, not the
planner's (``take cd 2`` when the planner meant ``cd 1`` swaps the two names everywhere after).
Ours (issue 18, campaign 5); no paper has this expert.

Only object finds are searched; the desk lamp of a Look task is where the planner goes.
"""
from __future__ import annotations

import re
from typing import Sequence

_SEE = re.compile(r"you see (.*?)(?:\.\s*$|\.\s)", re.S)
_TAKE = re.compile(r"take (.+?) (\d+) from (.+)")
_NUM = re.compile(r"^(.*\S)\s+(\d+)$")


def _name_key(r: str) -> tuple[str, int]:
    m = _NUM.match(r)
    return (m.group(1), int(m.group(2))) if m else (r, 0)


def receptacles(admissible: Sequence[str]) -> list[str]:
    """The receptacles of a room: the targets of its ``go to`` actions, by type name then
    number (``cabinet 2`` before ``cabinet 10``)."""
    return sorted({a[len("go to "):] for a in admissible if a.startswith("go to ")}, key=_name_key)


def search_order(rooms: Sequence[str], places: Sequence[str] = ()) -> list[str]:
    """``rooms`` (receptacle names) in search order: those whose type (the name without its
    number) is in ``places`` first, in ``places``' order, then every other one by type name and
    number. ``places`` are receptacle types (``"countertop"``); unknown ones are ignored."""
    rank = {p.strip().lower(): i for i, p in reversed(list(enumerate(places)))}
    return sorted(rooms, key=lambda r: (rank.get(_name_key(r)[0], len(rank)),) + _name_key(r))


def instances_seen(observation: str, obj_type: str) -> list[str]:
    """Instances of ``obj_type`` the observation says are there (``"tomato 1"``), in order.
    Whole words: ``knife`` does not match ``butterknife 1``."""
    out = []
    for m in _SEE.finditer(observation + " "):
        out += re.findall(rf"(?<![a-z]){re.escape(obj_type)} \d+\b", m.group(1))
    return out


def _already_done(action: str, adm: set) -> bool:
    """A planned ``go to R`` / ``open R`` that is not admissible because the search is at R
    already or opened it: some other action on R is admissible (``close R`` after an open)."""
    m = re.fullmatch(r"(go to|open) (.+)", action)
    if not m:
        return False
    r = m.group(2)
    if m.group(1) == "open":
        return f"close {r}" in adm
    return any(a.endswith(" " + r) or f" {r} " in a or a.endswith(f"from {r}") for a in adm if not a.startswith("go to "))


class SearchExpert:
    """One episode of the searching expert (module docstring).

    Args:
      plan: the planner's actions for the game (``ExpertRecord.actions``).
      find_places: per find unit of the plan, in order, the receptacle types to search first
        (``[]`` = the default order); missing entries mean ``[]``.

    Call :meth:`act` with each observation and admissible list (the first call with the reset
    observation); it returns the next action or None when the plan is over. ``error`` is set
    (and None returned) when the plan cannot be followed: an action that is not admissible, or
    a search that visited every receptacle without finding the object.
    """

    def __init__(self, plan: Sequence[str], find_places: Sequence[Sequence[str]] = ()):
        self.plan = [a.strip() for a in plan]
        self.find_places = [list(p) for p in find_places]
        self.i = 0              # next plan action
        self.finds = 0          # find units done
        self.sub: dict[str, str] = {}
        self.taken: set[str] = set()
        self.seen: dict[str, list[str]] = {}     # receptacle -> untaken instances of the searched type seen there
        self.checked: set[str] = set()           # receptacles looked into during this search
        self.search: dict | None = None
        self.error: str | None = None
        self.at: str | None = None

    # -- plan bookkeeping -------------------------------------------------------------------
    def _find_at(self, i: int) -> tuple[str, str, int] | None:
        """(planner instance, its type, index of its take) when plan[i] starts a find unit."""
        if not self.plan[i].startswith("go to "):
            return None
        j = i + 1
        if j < len(self.plan) and self.plan[j].startswith("open "):
            j += 1
        if j < len(self.plan):
            m = _TAKE.fullmatch(self.plan[j])
            if m and m.group(3) == self.plan[i][len("go to "):]:
                return f"{m.group(1)} {m.group(2)}", m.group(1), j
        return None

    def _rename(self, action: str) -> str:
        if not self.sub:
            return action
        pat = re.compile("|".join(rf"\b{re.escape(k)}\b" for k in sorted(self.sub, key=len, reverse=True)))
        return pat.sub(lambda m: self.sub[m.group(0)], action)

    def _bind(self, planned: str, actual: str) -> None:
        """Later actions naming ``planned`` name ``actual`` (and the reverse: a swap)."""
        cur = {v: k for k, v in self.sub.items()}
        p_src = cur.get(actual, actual)        # the planner name now mapped to ``actual``
        old = self.sub.get(planned, planned)
        self.sub[planned] = actual
        if p_src != planned:
            self.sub[p_src] = old

    # -- acting -----------------------------------------------------------------------------
    def _fail(self, why: str) -> None:
        self.error = why
        return None

    def act(self, observation: str, admissible: Sequence[str]) -> str | None:
        """The next action for ``observation`` (the reset observation first, then each step's)
        and its ``admissible`` commands; None when the plan is over or ``error`` was set."""
        if self.error:
            return None
        adm = set(admissible)
        if self.search is not None:
            return self._search_step(observation, adm)
        if self.i >= len(self.plan):
            return None
        f = self._find_at(self.i)
        if f is not None:
            planned, typ, j = f
            places = self.find_places[self.finds] if self.finds < len(self.find_places) else []
            # the order from the admissible "go to"s now (where it stands has none: nothing to find there
            # at a search's start -- a Pick Two's second search starts at the target, holding the first)
            self.search = {"planned": planned, "type": typ, "end": j, "opened": False,
                           "order": search_order(receptacles(admissible), places)}
            self.checked = set()
            return self._search_step(observation, adm, fresh=True)
        a = self._rename(self.plan[self.i])
        if a not in adm:
            m = re.fullmatch(r"(?:move|put) .+? (?:to|in|on|in/on) (.+)", a)
            if m and f"open {m.group(1)}" in adm:   # the planner opened it in a find we replaced
                return f"open {m.group(1)}"
            if _already_done(a, adm):      # the search went there or opened it already
                self.i += 1
                if a.startswith("go to "):
                    self.at = a[len("go to "):]
                return self.act(observation, admissible)
            return self._fail(f"plan action {a!r} not admissible")
        self.i += 1
        if a.startswith("go to "):
            self.at = a[len("go to "):]
        return a

    def _search_step(self, observation: str, adm: set, fresh: bool = False) -> str | None:
        s = self.search
        typ = s["type"]
        if not fresh and self.at is not None:
            here = [x for x in instances_seen(observation, typ) if x not in self.taken]
            self.seen[self.at] = here
            for x in here:
                take = f"take {x} from {self.at}"
                if take in adm:
                    return self._took(s, x, take)
            if f"open {self.at}" in adm and not s["opened"] and "is closed" in observation:
                s["opened"] = True
                return f"open {self.at}"
            self.checked.add(self.at)
        # next receptacle: one where an untaken instance was seen, else the next of the order
        remembered = [r for r, xs in self.seen.items() if r not in self.checked and r != self.at
                      and any(x not in self.taken and x.rsplit(" ", 1)[0] == typ for x in xs)]
        for nxt in remembered + [r for r in s["order"] if r not in self.checked and r != self.at]:
            self.at, s["opened"] = nxt, False
            if f"go to {nxt}" in adm:
                return f"go to {nxt}"
            # co-located with where it stands (ALFWorld: drawer 3 beside drawer 2 has no
            # "go to"): open or examine it from here
            if f"open {nxt}" in adm:
                s["opened"] = True
                return f"open {nxt}"
            if f"examine {nxt}" in adm:
                return f"examine {nxt}"
            self.checked.add(nxt)          # not reachable from here: skipped
        return self._fail(f"searched every receptacle without finding a {typ}")

    def _took(self, s: dict, actual: str, take: str) -> str:
        self._bind(s["planned"], actual)
        self.taken.add(actual)
        self.i = s["end"] + 1
        self.finds += 1
        self.search = None
        return take


def play_expert(env, task, expert: SearchExpert, max_steps: int) -> tuple[list[str], bool]:
    """One episode of ``expert`` in an ALFWorld ``env`` (reset on ``task``), in-process, up to
    ``max_steps`` actions: (actions played, won). The oracle benchmark and the tests play it so;
    SFT data comes from :func:`skillax.methods.common.search_sft.search_episodes` (on a pool)."""
    obs, info = env.reset(task)
    actions: list[str] = []
    while len(actions) < max_steps:
        a = expert.act(obs, info["admissible_commands"])
        if a is None:
            return actions, False
        actions.append(a)
        obs, _, done, info = env.step(a)
        if done:
            return actions, bool(info.get("won"))
    return actions, False
