"""ALFWorld text games: loading, rebuilding and playing.

Source: Shridhar et al., "ALFWorld: Aligning Text and Embodied Environments for Interactive
Learning" (ICLR 2021); the ``alfworld`` 0.4.2 wheel (``AlfredDemangler``, ``AlfredInfos``,
``alfred.pddl``/``alfred.twl2``) and textworld[pddl] (fast-downward planner).

Two data layouts, one loader (:func:`load_alfworld_tasks`):

* the compact pack ``../shared/data/alfworld/games.jsonl.gz`` (474 solvable games of
  valid_seen / valid_unseen / valid_train; see its README) -- each line holds split,
  game_id, task_type, goal and the PDDL problem;
* the ``alfworld-download`` layout ``$ALFWORLD_DATA/json_2.1.1/<split>/<task>/<trial>/
  game.tw-pddl`` -- the goal is read back from the grammar's ``task`` rule; games ALFWorld
  itself skips (movable/Sliced, no ``solvable`` key, unsolvable) are skipped.

Every game is rebuilt (README "How to rebuild a playable game") from its problem + goal with
a domain/grammar pair: ``logic="wheel"`` (default; the alfworld wheel's files: put is
``move X to Y``) or ``logic="original"`` (the json_2.1.1 files: ``put X in/on Y``). Rebuilt
files go to ``$SKILLAX_CACHE/alfworld/<logic>/``. Episodes are capped at 50 steps (ALFWorld's
evaluation setting); success = ``won``.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import pathlib
import re
import zlib
from typing import Any, Iterable

from skillax.agents.envs.base import MAX_ACTION_CHARS, Task, atomic_write_text, cache_dir
from skillax.agents.envs.textworld_env import TWGameEnv

TASK_TYPES = ("pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
              "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep",
              "pick_two_obj_and_place")
PACK_SPLITS = ("valid_seen", "valid_unseen", "valid_train")
REQUIRED_FIELDS = ("split", "game_id", "task_type", "goal", "pddl_problem")
GOAL_PLACEHOLDER = "UNKNOWN GOAL"

# ALFWorld's templated goals (alfworld/gen/goal_library.py); all 474 pack goals match one.
_GOAL_PATTERNS = [(tt, re.compile(p)) for tt, p in [
    ("look_at_obj_in_light", r"^examine the (?P<obj>.+) with the (?P<rec>.+)$"),
    ("look_at_obj_in_light", r"^look at (?P<obj>.+) under the (?P<rec>.+)$"),
    ("pick_clean_then_place_in_recep", r"^clean some (?P<obj>.+) and put it in (?P<rec>.+)$"),
    ("pick_clean_then_place_in_recep", r"^put a clean (?P<obj>.+) in (?P<rec>.+)$"),
    ("pick_cool_then_place_in_recep", r"^cool some (?P<obj>.+) and put it in (?P<rec>.+)$"),
    ("pick_cool_then_place_in_recep", r"^put a cool (?P<obj>.+) in (?P<rec>.+)$"),
    ("pick_heat_then_place_in_recep", r"^heat some (?P<obj>.+) and put it in (?P<rec>.+)$"),
    ("pick_heat_then_place_in_recep", r"^put a hot (?P<obj>.+) in (?P<rec>.+)$"),
    ("pick_two_obj_and_place", r"^find two (?P<obj>.+) and put them in (?P<rec>.+)$"),
    ("pick_two_obj_and_place", r"^put two (?P<obj>.+) in (?P<rec>.+)$"),
    ("pick_and_place_simple", r"^put (?:a|some) (?P<obj>.+) (?:in|on) (?P<rec>.+)$"),
]]


class AlfWorldDataError(ValueError):
    """A malformed ALFWorld data file; the message names the file and the record."""


def parse_goal(goal: str) -> dict[str, str] | None:
    """Parse a templated ALFWorld goal into ``{"task_type", "object", "receptacle"}``.

    ``"put a clean butterknife in countertop"`` -> pick_clean_then_place_in_recep,
    butterknife, countertop. Returns None for a goal matching no template (e.g. a human
    annotation); callers then fall back on the task folder name.
    """
    g = goal.strip().rstrip(".").lower()
    for tt, pat in _GOAL_PATTERNS:
        m = pat.match(g)
        if m:
            return {"task_type": tt, "object": m["obj"], "receptacle": m["rec"]}
    return None


def default_data_dir() -> str | None:
    """First existing of ``$SKILLAX_ALFWORLD_DATA``, ``<repo>/../shared/data/alfworld``,
    ``$ALFWORLD_DATA``; None when none exists."""
    repo = pathlib.Path(__file__).resolve().parents[3]
    for cand in (os.environ.get("SKILLAX_ALFWORLD_DATA"), str(repo.parent / "shared" / "data" / "alfworld"),
                 os.environ.get("ALFWORLD_DATA")):
        if cand and os.path.isdir(cand):
            return cand
    return None


def _check_record(rec: Any, where: str) -> dict:
    if not isinstance(rec, dict):
        raise AlfWorldDataError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    missing = [k for k in REQUIRED_FIELDS if not isinstance(rec.get(k), str) or not rec.get(k)]
    if missing:
        gid = rec.get("game_id", "?")
        raise AlfWorldDataError(f"{where} (game_id={gid}): missing or empty field(s) {missing}")
    if rec["task_type"] not in TASK_TYPES:
        raise AlfWorldDataError(f"{where} (game_id={rec['game_id']}): unknown task_type {rec['task_type']!r}")
    return rec


@functools.lru_cache(maxsize=4)
def _read_pack_cached(path: str, mtime: float) -> tuple[dict, ...]:
    out = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise AlfWorldDataError(f"{path}: line {n}: not valid JSON ({e.msg} at column {e.colno})") from None
                out.append(_check_record(rec, f"{path}: line {n}"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise AlfWorldDataError(f"{path}: cannot read as gzip'd JSON lines ({e})") from None
    return tuple(out)


def read_pack(path: str) -> list[dict]:
    """Records of a ``games.jsonl.gz`` pack (cached per file and mtime).

    Raises AlfWorldDataError naming the file and line for a non-JSON line, a record that is
    not an object, a missing/empty field of :data:`REQUIRED_FIELDS` or an unknown task type.
    """
    return list(_read_pack_cached(os.path.abspath(path), os.path.getmtime(path)))


_TASK_RULE = re.compile(r'"task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _goal_from_grammar(grammar: str, where: str) -> str:
    """The goal ALFWorld substituted into the grammar's ``task`` rule (the grammar is a
    TextWorld ``.twl2`` text: ``grammar :: \"\"\" {json rules} \"\"\";``)."""
    m = _TASK_RULE.search(grammar or "")
    if not m:
        raise AlfWorldDataError(f"{where}: grammar has no 'task' rule")
    rhs = json.loads(f'"{m.group(1)}"')
    g = re.match(r"^\s*Your task is to:\s*(.*?)\.?\s*$", rhs, re.S)
    if not g or not g.group(1):
        raise AlfWorldDataError(f"{where}: unexpected task rule {rhs!r}")
    return g.group(1)


def read_download_layout(root: str, splits: Iterable[str]) -> list[dict]:
    """Records from ``<root>/json_2.1.1/<split>/<task>/<trial>/game.tw-pddl`` (or ``root``
    being ``json_2.1.1`` itself), skipping what ALFWorld's loader skips. Records carry an
    extra ``game_file`` (the original file). Raises AlfWorldDataError for an unreadable game.
    """
    base = os.path.join(root, "json_2.1.1") if os.path.isdir(os.path.join(root, "json_2.1.1")) else root
    out = []
    for split in splits:
        sdir = os.path.join(base, split)
        if not os.path.isdir(sdir):
            raise AlfWorldDataError(f"{base}: no split folder {split!r} (have {sorted(os.listdir(base))})")
        for dirpath, _, files in sorted(os.walk(sdir)):
            if "game.tw-pddl" not in files or "movable" in dirpath or "Sliced" in dirpath:
                continue
            path = os.path.join(dirpath, "game.tw-pddl")
            try:
                with open(path, encoding="utf-8") as f:
                    game = json.load(f)
            except (OSError, json.JSONDecodeError) as e:
                raise AlfWorldDataError(f"{path}: not a readable game file ({e})") from None
            if not isinstance(game, dict) or not game.get("solvable"):
                continue
            game_id = os.path.relpath(dirpath, sdir)
            rec = {"split": split, "game_id": game_id, "task_type": game_id.split("-", 1)[0],
                   "goal": _goal_from_grammar(game.get("grammar", ""), path),
                   "pddl_problem": game.get("pddl_problem"), "game_file": path}
            out.append(_check_record(rec, path))
    return out


def record_to_task(rec: dict, logic_dir: str | None = None) -> Task:
    """Turn one record into a :class:`Task` (family = task type; attributes from the goal,
    falling back on the folder name ``<task_type>-<Object>-<MRecep>-<Recep>-<scene>``)."""
    folder = rec["game_id"].split("/", 1)[0]
    parts = folder.split("-")
    parsed = parse_goal(rec["goal"])
    if parsed is None and len(parts) == 5:
        parsed = {"task_type": rec["task_type"], "object": parts[1].lower(), "receptacle": parts[3].lower()}
    parsed = parsed or {"object": "", "receptacle": ""}
    attrs = {"task_type": rec["task_type"], "object": parsed["object"], "receptacle": parsed["receptacle"],
             "objects": [parsed["object"]] if parsed["object"] else [],
             "receptacles": [parsed["receptacle"]] if parsed["receptacle"] else [],
             "scene": parts[-1] if len(parts) == 5 else ""}
    payload = {"game_id": rec["game_id"], "pddl_problem": rec["pddl_problem"], "logic_dir": logic_dir}
    if rec.get("game_file"):
        payload["game_file"] = rec["game_file"]
    return Task(id=f"{rec['split']}/{rec['game_id']}", env="alfworld", family=rec["task_type"],
                goal=rec["goal"], split=rec["split"], attributes=attrs, payload=payload)


def load_alfworld_tasks(data_dir: str | None = None, splits: Iterable[str] | None = None,
                        task_types: Iterable[str] | None = None) -> list[Task]:
    """Load ALFWorld tasks from the pack or the alfworld-download layout.

    Args:
      data_dir: folder with ``games.jsonl.gz`` (pack) or ``json_2.1.1/`` (download layout);
        default :func:`default_data_dir`.
      splits: pack: subset of :data:`PACK_SPLITS` (default all three); download layout:
        folder names (default ``valid_seen``, ``valid_unseen``).
      task_types: keep only these (names from :data:`TASK_TYPES`).
    Returns tasks sorted by (split, game_id). Raises FileNotFoundError when no data is
    found, ValueError on an unknown split / task type, AlfWorldDataError on bad records.
    """
    data_dir = data_dir or default_data_dir()
    if data_dir is None or not os.path.isdir(data_dir):
        raise FileNotFoundError(f"ALFWorld data not found (data_dir={data_dir!r}); set SKILLAX_ALFWORLD_DATA "
                                "or ALFWORLD_DATA, or provide ../shared/data/alfworld")
    pack = os.path.join(data_dir, "games.jsonl.gz")
    if os.path.exists(pack):
        splits = tuple(splits or PACK_SPLITS)
        bad = [s for s in splits if s not in PACK_SPLITS]
        if bad:
            raise ValueError(f"unknown ALFWorld pack split(s) {bad}; known: {list(PACK_SPLITS)}")
        recs = [r for r in read_pack(pack) if r["split"] in splits]
        logic_dir = os.path.join(data_dir, "domain_json_2.1.1")
    else:
        recs = read_download_layout(data_dir, tuple(splits or ("valid_seen", "valid_unseen")))
        logic_dir = None
    if task_types is not None:
        task_types = set(task_types)
        bad = sorted(task_types - set(TASK_TYPES))
        if bad:
            raise ValueError(f"unknown ALFWorld task type(s) {bad}; known: {list(TASK_TYPES)}")
        recs = [r for r in recs if r["task_type"] in task_types]
    recs.sort(key=lambda r: (r["split"], r["game_id"]))
    return [record_to_task(r, logic_dir) for r in recs]


@functools.lru_cache(maxsize=8)
def _logic_files(logic: str, logic_dir: str | None) -> tuple[str, str]:
    if logic == "wheel":
        import alfworld

        d = os.path.join(os.path.dirname(alfworld.__file__), "data")
    elif logic == "original":
        if not logic_dir:
            raise ValueError("logic='original' needs the pack's domain_json_2.1.1 folder (task payload logic_dir)")
        d = logic_dir
    else:
        raise ValueError(f"logic must be 'wheel' or 'original', got {logic!r}")
    with open(os.path.join(d, "alfred.pddl"), encoding="utf-8") as f:
        domain = f.read()
    with open(os.path.join(d, "alfred.twl2"), encoding="utf-8") as f:
        grammar = f.read()
    if grammar.count(GOAL_PLACEHOLDER) != 1:
        raise AlfWorldDataError(f"{d}/alfred.twl2: expected exactly one {GOAL_PLACEHOLDER!r} placeholder")
    return domain, grammar


def build_game_file(task: Task, logic: str = "wheel", root: str | None = None) -> str:
    """Write (once) and return the rebuilt ``.tw-pddl`` file of ``task``.

    With ``logic="original"`` and a download-layout task, the original game file is
    returned as is. The file is keyed by a hash of its content, written atomically.
    """
    if "pddl_problem" not in task.payload:
        raise ValueError(f"task {task.id!r} is not an ALFWorld task: payload lacks 'pddl_problem'")
    if logic == "original" and task.payload.get("game_file") and not task.payload.get("logic_dir"):
        return task.payload["game_file"]
    domain, grammar = _logic_files(logic, task.payload.get("logic_dir"))
    game = {"pddl_domain": domain, "grammar": grammar.replace(GOAL_PLACEHOLDER, task.goal),
            "pddl_problem": task.payload["pddl_problem"], "solvable": True}
    text = json.dumps(game)
    key = hashlib.sha1(text.encode()).hexdigest()[:20]
    path = os.path.join(root or cache_dir(os.path.join("alfworld", logic)), f"{key}.tw-pddl")
    if not os.path.exists(path):
        atomic_write_text(path, text)
    return path


class AlfWorldEnv(TWGameEnv):
    """ALFWorld through textworld with alfworld's ``AlfredDemangler`` (shuffle off) and
    ``AlfredInfos`` wrappers, as in ``alfworld.agents.environment.AlfredTWEnv``.

    Args:
      max_steps: step cap (ALFWorld evaluation: 50).
      logic: ``"wheel"`` or ``"original"`` domain/grammar (module docstring).
      expert_plan: request textworld's ``policy_commands`` and return them as
        ``info["expert_plan"]``: True = fast-downward plans after the reset and after every
        step (1-30 s per reset), "reset" = after the reset only (the experts follow that plan).
      root: where rebuilt game files go (default ``$SKILLAX_CACHE/alfworld/<logic>``).
      fast_pddl: install the exact speed-ups of :mod:`skillax.agents.envs.pddl_speedups` in
        this process (same observations and admissible commands; off with False or
        ``$SKILLAX_FAST_PDDL=0``).
    Latency (2-vCPU Xeon): reset 1-2 s (PDDL -> SAS translation), step 0.05-0.25 s with
    textworld as it is; with ``fast_pddl`` resets ~2.4x and steps ~12x faster (measured in
    the pddl_speedups docstring).
    """

    def __init__(self, max_steps: int = 50, logic: str = "wheel", expert_plan: bool | str = False,
                 max_action_chars: int = MAX_ACTION_CHARS, root: str | None = None,
                 fast_pddl: bool = True):
        super().__init__(max_steps, max_action_chars, expert_plan)
        if logic not in ("wheel", "original"):
            raise ValueError(f"logic must be 'wheel' or 'original', got {logic!r}")
        self.logic, self.root = logic, root
        if fast_pddl:
            from skillax.agents.envs import pddl_speedups

            if pddl_speedups.enabled_by_env():
                pddl_speedups.install()

    def _game_file(self, task: Task) -> str:
        return build_game_file(task, self.logic, self.root)

    def _wrappers(self) -> list:
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

        return [AlfredDemangler(shuffle=False), AlfredInfos]

    def _extra_infos(self) -> list[str]:
        return ["gamefile"]


def stratified_sample(tasks: Iterable[Task], n_per_split: int) -> list[Task]:
    """Deterministic sample: within each split, order games by SHA-1 of ``game_id`` and
    visit task types round-robin (alphabetical) until ``n_per_split`` games are taken --
    the selection procedure of the pack README's verification (10 per split there)."""
    by_split: dict[str, dict[str, list[Task]]] = {}
    for t in tasks:
        by_split.setdefault(t.split, {}).setdefault(t.family, []).append(t)
    out: list[Task] = []
    for split in sorted(by_split):
        queues = {tt: sorted(ts, key=lambda t: hashlib.sha1(t.payload["game_id"].encode()).hexdigest())
                  for tt, ts in sorted(by_split[split].items())}
        taken = 0
        while taken < n_per_split and any(queues.values()):
            for tt in sorted(queues):
                if queues[tt] and taken < n_per_split:
                    out.append(queues[tt].pop(0))
                    taken += 1
    return out
