"""Skill1 skill library: records with EMA utility, admission, merge, capacity eviction; SQLite.

Record (DESIGN.md §1.3): id, scenario, description_head, strategy, utility U, count n,
created_step, attempt_type (+ `merges`, how many duplicates were folded into it, and
`source_tasks`, the ids of the tasks it was distilled from: the inserting task first, then each
merged duplicate's, distinct, at most `MAX_SOURCE_TASKS`; provenance only, issue 22).

* Birth: U = 0.5, n = 1 (`BIRTH_COUNT`: the task the skill was distilled from counts as its first
  use; this is what makes the released-code score below non-zero for a new skill).
* EMA (Skill1 paper, utility update): after each task, for ALL retrieved ids (the K candidates,
  not just the top-1): U <- (1 - alpha) U + alpha r; alpha = 0.05. Duplicate ids in one call are
  updated once. Worked example: 0.5 -r=1-> 0.525 -r=0-> 0.49875.
* Count n(s) (the eviction score's n): the paper's n(s) is the number of times s was *selected*
  (used as the top-1 skill); `update_utilities(ids, r, counted=[top1])` adds 1 to those ids only.
  `counted=None` adds 1 to every id updated (the K retrieved: the `library.count_mode =
  "retrieved"` switch of the Skill1 loop).
* Admission (`admit`): only when the task reward r >= 1 (success), the distil JSON parsed, and the
  lesson is non-trivial (some lesson with >= `min_lesson_words` words that is not a placeholder
  such as "none"/"n/a"). The policy's own `task_success` claim is not trusted; r decides.
* Merge instead of insert: an existing record with the *identical* strategy text and scenario
  cosine > 0.85 (`merge_threshold`) absorbs the new one (its `merges` += 1; U, n unchanged).
  Cosine comes from `embed_fn` (texts -> L2-normalised rows, e.g. the dense retriever's MiniLM);
  without one, cosine is 1 for identical scenario text and 0 otherwise.
* Capacity (default 5000): before inserting into a full library, the record with the lowest
  eviction score is removed (ties: the oldest id). `eviction="log2_n_plus_1"` (default; Skill1's
  released code): score = U * log2(n + 1). `eviction="paper_log_n"`: score = U * ln(n) (paper).
  Default is the released form: with n = 1 at birth, log2(n + 1) = 1 and a new skill scores
  U = 0.5, so it competes with old skills on utility (an old skill whose U decayed through
  repeated failures -- e.g. 40 failed retrievals: 0.064 * log2(42) = 0.35 -- goes first). Under
  U * ln(n) every skill not yet retrieved scores exactly 0, so a full library always evicts its
  newest skills before they could be retrieved, and no retrieved skill with U > 0 is ever evicted
  while an unretrieved one exists.
* Token budget (issue 22 item 7; `token_budget`, 0 = off = the paper): the library's size is
  the sum of `token_count(record)` over its records (`token_count`: the play-prompt skill text's
  tokens, set by the Skill1 loop with the policy tokenizer; default: `skills.budget.fallback_count`
  of `description_head + "\n" + strategy`; cached per id, a record's text never changes). After
  an insert that leaves the library over budget, records are evicted by the same eviction score
  (lowest first, ties: oldest id) until it is within budget; the new record is never the one
  evicted (as with capacity). A record that alone exceeds the budget is rejected before anything
  changes (`Admission("rejected", reason="over the token budget: ...", over_budget=True)`; the
  library stays byte-identical). Budget evictions are listed in `Admission.budget_evicted`
  (also in `evicted`). Merges change no text, so they never change the size.
  Worked example (fallback counts, budget 10): records of 4, 4, 4 tokens with scores 0.5 (id 1),
  0.3 (id 2), 0.5 (id 3); inserting a 4-token record (16 > 10) evicts id 2 (lowest score),
  then id 1 (0.5, older than 3): 8 tokens remain.
* Storage: SQLite (stdlib), WAL journal, one row per record; EMA/merge are row UPDATEs. A `meta`
  table holds `schema_version` (2); a schema-1 file (before `source_tasks`) is upgraded in place
  on open (the column added, empty: its records' source tasks are unknown); a file with another
  version raises `LibrarySchemaError`. Ids use
  AUTOINCREMENT, so an evicted id is never reused (retriever caches stay keyed correctly).
* Checkpoints: `state_bytes()` / `SkillLibrary.from_bytes()` (sqlite backup API + serialize),
  or `snapshot_to(path)` (backup API to a file).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import re
import sqlite3
from typing import Callable, Iterable, Sequence

import numpy as np

from skillax.skills import budget as budget_lib
from skillax.skills.parsers import Distil, DistilParse
from skillax.skills.repo import SKILL_FILE, atomic_write_text
from skillax.skills.skill_md import (
    MAX_BODY_CHARS, MAX_DESCRIPTION_CHARS, SkillDoc, _BAD_CHARS_RE, render_skill_md,
)

SCHEMA_VERSION = 2
_UPGRADABLE = ("1",)             # schema 1 = schema 2 without the source_tasks column
MAX_SOURCE_TASKS = 32            # source task ids kept per record (the first ones)
BIRTH_UTILITY = 0.5
BIRTH_COUNT = 1
EVICTIONS = ("log2_n_plus_1", "paper_log_n")
_TRIVIAL = {"", "none", "n/a", "na", "null", "nothing", "no lesson", "-", "...", "tbd", "todo"}
_COLS = ("id, scenario, description_head, strategy, utility, count, created_step, attempt_type, merges, "
         "source_tasks")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS skills(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scenario TEXT NOT NULL, description_head TEXT NOT NULL, strategy TEXT NOT NULL,
  utility REAL NOT NULL, count INTEGER NOT NULL, created_step INTEGER NOT NULL,
  attempt_type TEXT NOT NULL, merges INTEGER NOT NULL DEFAULT 0,
  source_tasks TEXT NOT NULL DEFAULT '[]');
CREATE INDEX IF NOT EXISTS skills_strategy ON skills(strategy);
"""


class LibraryError(RuntimeError):
    """The library file cannot be used (not SQLite, not a skillax library, ...)."""


class LibrarySchemaError(LibraryError):
    """The library file was written by another schema version."""


@dataclasses.dataclass(frozen=True)
class SkillRecord:
    id: int
    scenario: str
    description_head: str
    strategy: str
    utility: float
    count: int
    created_step: int
    attempt_type: str
    merges: int = 0
    source_tasks: tuple[str, ...] = ()


def _record(row) -> SkillRecord:
    """A `SkillRecord` from a `_COLS` row (source_tasks is stored as a JSON list)."""
    *head, src = row
    return SkillRecord(*head, source_tasks=tuple(json.loads(src or "[]")))


@dataclasses.dataclass(frozen=True)
class Admission:
    """status: "inserted" | "merged" | "rejected"; `id` of the new or absorbing record."""

    status: str
    id: int | None = None
    evicted: tuple[int, ...] = ()
    reason: str | None = None
    cosine: float | None = None
    budget_evicted: tuple[int, ...] = ()
    over_budget: bool = False

    @property
    def admitted(self) -> bool:
        return self.status == "inserted"


def eviction_score(utility: float, count: int, eviction: str = "log2_n_plus_1") -> float:
    """U * log2(n + 1) (released code) or U * ln(n) (paper; -inf for n <= 0)."""
    if eviction == "log2_n_plus_1":
        return utility * math.log2(count + 1) if count >= 0 else float("-inf")
    if eviction == "paper_log_n":
        return utility * math.log(count) if count > 0 else float("-inf")
    raise ValueError(f"eviction must be one of {EVICTIONS}, got {eviction!r}")


def default_record_tokens(rec: SkillRecord) -> int:
    """`skills.budget.fallback_count` of `description_head + "\n" + strategy` (the default
    `SkillLibrary.token_count`; the Skill1 loop counts the play-prompt text with its tokenizer)."""
    return budget_lib.fallback_count(f"{rec.description_head}\n{rec.strategy}")


def _clean(text: str, limit: int) -> str:
    text = _BAD_CHARS_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).strip()
    return text[:limit]


def _goal(text: str) -> str:
    """A task text without its lead-in ('Your task for today is to: put a mug in cabinet.' ->
    'put a mug in cabinet'), whitespace collapsed, trailing period dropped."""
    from skillax.skills.spec import _TASK_LEAD_RE

    t = " ".join(_clean(text, 10 * MAX_DESCRIPTION_CHARS).split())
    return _TASK_LEAD_RE.sub("", t).strip().rstrip(".").strip()


# a strategy line's leading label ("Action lesson:", as Distil.strategy_text writes it) or list
# number ("1."), dropped from the lesson the description quotes; any other colon is the lesson's
# own ("(food: countertop, ...)", "Find the object X: go to ...") and is kept
_LESSON_LABEL_RE = re.compile(r"^\s*(?:(?:action|navigation) lesson:|\d+[.)])\s*", re.I)


def record_to_skill(rec: SkillRecord) -> SkillDoc:
    """A library record as a strict-valid SKILL.md document that says what it is for.

    name: a slug (`skills.spec.slugify`) of the policy's description_head when it differs from
      the task, else of the task it was distilled from ('Your task is to: put a clean mug in
      cabinet.' -> 'put-clean-mug-cabinet'); `skill-<id>` only when no word is left. Export
      de-duplicates equal names (`-2`, `-3`).
    description: what it does and when to use it: '<head, or: Lessons for tasks like "<task>">:
      <first lesson>. Use when a task asks you to <task>, or a similar task.' (<= 1024 chars);
      a skill imported from outside Skill1 (`skills.importing.seed_library`: scenario = head =
      its description) keeps its own description.
    body: '## Scenario' + scenario + '## Strategy' + strategy (`skills.importing` reads it back).
    metadata (provenance; Skill1 record fields): method, library-id, utility, count,
      created-step, attempt-type, merges, source ('imported' or 'learned'), description-head,
      source-tasks (the record's `source_tasks` joined by ", "; absent when none is known) and,
      for attempt-types 'success' and 'raw', reward-at-creation = 1 (both are admitted only at
      r = 1, DESIGN.md §1.3).
    """
    from skillax.skills.spec import slugify

    goal = _goal(rec.scenario)
    head = _goal(rec.description_head)
    head = head if head and head.lower() != goal.lower() else ""   # the policy's own head
    lesson = next((_LESSON_LABEL_RE.sub("", ln).strip() for ln in rec.strategy.splitlines() if ln.strip()), "")
    lesson = " ".join(lesson.split())[:300].rstrip(".")
    what = head[:300] or (f'Lessons for tasks like "{goal[:300]}"' if goal else f"Skill1 record {rec.id}")
    when = f"Use when a task asks you to {goal[:300]}, or a similar task." if goal else "Use for similar tasks."
    desc = f"{what}: {lesson}. {when}" if lesson else f"{what}. {when}"
    if rec.attempt_type == "imported" and rec.scenario == rec.description_head and goal:
        desc = " ".join(_clean(rec.description_head, MAX_DESCRIPTION_CHARS).split())   # its own words
    desc = desc[:MAX_DESCRIPTION_CHARS].strip()
    body = (f"## Scenario\n\n{_clean(rec.scenario, MAX_BODY_CHARS // 2)}\n\n"
            f"## Strategy\n\n{_clean(rec.strategy, MAX_BODY_CHARS // 2 - 100)}\n")
    imported = rec.attempt_type == "imported"
    meta = {"method": "skill1", "library-id": rec.id, "utility": float(rec.utility),
            "count": int(rec.count), "created-step": int(rec.created_step),
            "attempt-type": _clean(rec.attempt_type, 200), "merges": int(rec.merges),
            "source": "imported" if imported else "learned",
            "description-head": _clean(rec.description_head, MAX_DESCRIPTION_CHARS)}
    if rec.source_tasks:
        meta["source-tasks"] = ", ".join(rec.source_tasks)
    if rec.attempt_type in ("success", "raw"):   # `admit` and the raw path both require r = 1
        meta["reward-at-creation"] = 1.0
    return SkillDoc(slugify(head or goal) or f"skill-{rec.id}", desc, body, meta)


def is_trivial_lesson(text: str, min_words: int = 3) -> bool:
    t = " ".join(text.split()).strip().lower().rstrip(".")
    return t in _TRIVIAL or len(t.split()) < min_words


def _check_version(conn: sqlite3.Connection, where: str) -> bool:
    """True if the db is empty (new); raises unless it is a skillax library of our version or
    of an upgradable one (`_UPGRADABLE`, upgraded by `_upgrade`)."""
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as e:
        raise LibraryError(f"{where} is not a usable SQLite database: {e}") from None
    if not tables:
        return True
    if "meta" not in tables or "skills" not in tables:
        raise LibraryError(f"{where} is not a skillax skill library (tables: {sorted(tables)})")
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is None:
        raise LibrarySchemaError(f"{where} has no schema_version row")
    if row[0] != str(SCHEMA_VERSION) and row[0] not in _UPGRADABLE:
        raise LibrarySchemaError(f"{where} has library schema_version {row[0]}; this skillax "
                                 f"reads schema_version {SCHEMA_VERSION} (migrate or start a new library)")
    return False


def _upgrade(conn: sqlite3.Connection) -> None:
    """Schema 1 -> 2 in place: add the `source_tasks` column (empty lists). No-op at schema 2."""
    (version,) = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if version == "1":
        with conn:
            conn.execute("ALTER TABLE skills ADD COLUMN source_tasks TEXT NOT NULL DEFAULT '[]'")
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


class SkillLibrary:
    """See the module docstring. `path` may be ':memory:' (tests; no WAL)."""

    def __init__(self, path: str | os.PathLike, *, capacity: int = 5000, alpha: float = 0.05,
                 eviction: str = "log2_n_plus_1", merge_threshold: float = 0.85,
                 embed_fn: Callable[[Sequence[str]], np.ndarray] | None = None,
                 min_lesson_words: int = 3, token_budget: int = 0,
                 token_count: Callable[[SkillRecord], int] | None = None):
        if eviction not in EVICTIONS:
            raise ValueError(f"eviction must be one of {EVICTIONS}, got {eviction!r}")
        if capacity < 1 or not 0.0 < alpha <= 1.0:
            raise ValueError(f"need capacity >= 1 and 0 < alpha <= 1 (got {capacity}, {alpha})")
        self.path = str(path)
        self.capacity, self.alpha, self.eviction = int(capacity), float(alpha), eviction
        self.merge_threshold, self.embed_fn = float(merge_threshold), embed_fn
        self.min_lesson_words = int(min_lesson_words)
        self.token_budget = budget_lib.check_budget(token_budget)
        self.token_count = token_count or default_record_tokens
        self._tokens: dict[int, int] = {}       # id -> token_count(record) (texts never change)
        try:
            self.conn = sqlite3.connect(self.path)
        except sqlite3.Error as e:
            raise LibraryError(f"cannot open library {self.path}: {e}") from None
        try:
            new = _check_version(self.conn, self.path)
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
            if new:
                with self.conn:
                    self.conn.executescript(_SCHEMA)
                    self.conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            else:
                _upgrade(self.conn)
        except BaseException:
            self.conn.close()
            raise
        self.conn.create_function("skill_score", 2, lambda u, n: eviction_score(u, n, self.eviction),
                                  deterministic=True)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "SkillLibrary":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM skills").fetchone()[0]

    def __contains__(self, skill_id: object) -> bool:
        return isinstance(skill_id, int) and self.conn.execute(
            "SELECT 1 FROM skills WHERE id=?", (skill_id,)).fetchone() is not None

    def get(self, skill_id: int) -> SkillRecord:
        row = self.conn.execute(f"SELECT {_COLS} FROM skills WHERE id=?", (int(skill_id),)).fetchone()
        if row is None:
            raise KeyError(f"no skill with id {skill_id}")
        return _record(row)

    def get_many(self, ids: Sequence[int]) -> list[SkillRecord]:
        """Records for `ids` in the given order; ids no longer present are skipped."""
        out = []
        for i in ids:
            try:
                out.append(self.get(i))
            except KeyError:
                pass
        return out

    def records(self) -> list[SkillRecord]:
        return [_record(r) for r in self.conn.execute(f"SELECT {_COLS} FROM skills ORDER BY id")]

    def ids(self) -> list[int]:
        return [r[0] for r in self.conn.execute("SELECT id FROM skills ORDER BY id")]

    def utilities(self, ids: Iterable[int]) -> dict[int, float]:
        """{id: U} for the ids still present (read at retrieval time for R_distill)."""
        return {r.id: r.utility for r in self.get_many(list(ids))}

    def retrieval_texts(self) -> dict[int, str]:
        """id -> text the dense retriever embeds: description_head, else scenario."""
        return {i: (h or s) for i, h, s in
                self.conn.execute("SELECT id, description_head, scenario FROM skills ORDER BY id")}

    def record_tokens(self, rec: SkillRecord) -> int:
        """`token_count(rec)`, cached by id."""
        n = self._tokens.get(rec.id)
        if n is None:
            n = self._tokens[rec.id] = int(self.token_count(rec))
        return n

    def size_tokens(self) -> int:
        """The library's size in tokens: the sum of `record_tokens` over every record."""
        return sum(self.record_tokens(r) for r in self.records())

    def eviction_order(self) -> list[int]:
        """All ids, first-to-evict first (lowest score, then oldest id)."""
        return [r[0] for r in self.conn.execute(
            "SELECT id FROM skills ORDER BY skill_score(utility, count) ASC, id ASC")]

    # ------------------------------------------------------------------ updates
    def update_utilities(self, ids: Iterable[int], reward: float,
                         counted: Iterable[int] | None = None) -> dict[int, float]:
        """EMA for every retrieved id: U <- (1-alpha) U + alpha r. n += 1 for the ids in
        ``counted`` (the selected top-1; ``None`` = every id in ``ids``). Returns new {id: U}.

        Raises ValueError for a non-finite reward or a counted id that is not in ``ids``
        (a selection is always one of the retrieved candidates)."""
        uniq = list(dict.fromkeys(int(i) for i in ids))
        r = float(reward)
        if not math.isfinite(r):
            raise ValueError(f"reward must be finite, got {reward!r}")
        count = set(uniq) if counted is None else {int(i) for i in counted}
        if not count <= set(uniq):
            raise ValueError(f"counted ids {sorted(count - set(uniq))} are not among the updated ids {uniq}")
        with self.conn:
            self.conn.executemany(
                "UPDATE skills SET utility = (1.0 - ?) * utility + ? * ?, count = count + ? WHERE id = ?",
                [(self.alpha, self.alpha, r, int(i in count), i) for i in uniq])
        return self.utilities(uniq)

    def _cosines(self, scenario: str, others: list[str]) -> np.ndarray:
        if self.embed_fn is None:
            return np.array([1.0 if o == scenario else 0.0 for o in others])
        e = np.asarray(self.embed_fn([scenario] + others), dtype=np.float64)
        return e[1:] @ e[0]

    def add(self, scenario: str, description_head: str, strategy: str, *, step: int,
            attempt_type: str = "success", source_task: str | None = None) -> Admission:
        """Insert a record (or merge it into an identical-strategy, similar-scenario one).
        ``source_task``: the id of the task it comes from (``Task.id``), recorded in
        ``source_tasks`` of the new record or appended to the absorbing one's (module docstring)."""
        src = [str(source_task)] if source_task else []
        cands = self.conn.execute("SELECT id, scenario, source_tasks FROM skills WHERE strategy=? ORDER BY id",
                                  (strategy,)).fetchall()
        if cands:
            cos = self._cosines(scenario, [c[1] for c in cands])
            j = int(np.argmax(cos))
            if cos[j] > self.merge_threshold:
                old = json.loads(cands[j][2] or "[]")
                new = (old + [t for t in src if t not in old])[:MAX_SOURCE_TASKS]
                with self.conn:
                    self.conn.execute("UPDATE skills SET merges = merges + 1, source_tasks = ? WHERE id=?",
                                      (json.dumps(new), cands[j][0]))
                return Admission("merged", cands[j][0], cosine=float(cos[j]))
        new_tokens = 0
        if self.token_budget:
            probe = SkillRecord(-1, scenario, description_head, strategy, BIRTH_UTILITY, BIRTH_COUNT,
                                int(step), attempt_type, 0, tuple(src))
            new_tokens = int(self.token_count(probe))
            if new_tokens > self.token_budget:
                return Admission("rejected", reason=budget_lib.budget_reason(
                    new_tokens, self.token_budget, "the library (this skill alone)"), over_budget=True)
        evicted, budget_evicted = [], []
        try:
            with self.conn:
                while self.conn.execute("SELECT COUNT(*) FROM skills").fetchone()[0] >= self.capacity:
                    (victim,) = self.conn.execute(
                        "SELECT id FROM skills ORDER BY skill_score(utility, count) ASC, id ASC LIMIT 1").fetchone()
                    self.conn.execute("DELETE FROM skills WHERE id=?", (victim,))
                    evicted.append(victim)
                cur = self.conn.execute(
                    "INSERT INTO skills (scenario, description_head, strategy, utility, count, "
                    "created_step, attempt_type, source_tasks) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (scenario, description_head, strategy, BIRTH_UTILITY, BIRTH_COUNT, int(step), attempt_type,
                     json.dumps(src)))
                new_id = cur.lastrowid
                if self.token_budget:
                    budget_evicted = self._evict_to_budget(protect=new_id)
        except BaseException:
            self._tokens.clear()    # a rolled-back insert's id may be handed out again
            raise
        for i in evicted + budget_evicted:
            self._tokens.pop(i, None)
        return Admission("inserted", new_id, tuple(evicted + budget_evicted), budget_evicted=tuple(budget_evicted))

    def _evict_to_budget(self, protect: int) -> list[int]:
        """Delete records in eviction order (never `protect`) until the size is within
        `token_budget` (inside the caller's transaction). Returns the ids deleted."""
        sizes = {r.id: self.record_tokens(r) for r in self.records()}
        total, out = sum(sizes.values()), []
        for victim in self.eviction_order():
            if total <= self.token_budget:
                break
            if victim == protect:
                continue
            self.conn.execute("DELETE FROM skills WHERE id=?", (victim,))
            total -= sizes[victim]
            out.append(victim)
        return out

    def admit(self, distil: Distil | DistilParse | None, reward: float, scenario: str, *, step: int,
              attempt_type: str = "success", source_task: str | None = None) -> Admission:
        """Admission rule of the module docstring; never raises for bad distil input.
        ``source_task``: the episode's task id (``add``)."""
        reason = None
        if isinstance(distil, DistilParse):
            reason = None if distil.ok else f"invalid distil JSON: {distil.reason}"
            distil = distil.distil
        if not float(reward) >= 1.0:  # also rejects NaN
            return Admission("rejected", reason=f"task not solved (r={float(reward):g}); not admitted")
        if distil is None:
            return Admission("rejected", reason=reason or "no distil output")
        lessons = [distil.action_lesson, distil.navigation_lesson]
        if all(is_trivial_lesson(x, self.min_lesson_words) for x in lessons):
            return Admission("rejected", reason="trivial lesson (no lesson with "
                                                f">= {self.min_lesson_words} words)")
        if not scenario or not scenario.strip():
            return Admission("rejected", reason="empty scenario")
        return self.add(scenario.strip(), distil.description_head, distil.strategy_text(),
                        step=step, attempt_type=attempt_type, source_task=source_task)

    # ------------------------------------------------------------------ export / checkpoints
    def export_skill_md(self, directory: str | os.PathLike, *, provenance: dict | None = None,
                        records: Sequence[SkillRecord] | None = None) -> list[str]:
        """Write every record (or `records`) through the Agent Skills export gate
        (`skills.spec.export_skills`) as `<dir>/<descriptive-name>/SKILL.md`. `provenance`:
        run-level strings added to each skill's metadata (`skills.spec.provenance(...)`).
        Returns the names written; skills that cannot be made valid are skipped and listed in
        `<dir>/.skillax-export.json`, which also lets the next export remove stale folders."""
        from skillax.skills.spec import export_skills

        recs = self.records() if records is None else records
        return list(export_skills([record_to_skill(r) for r in recs], directory,
                                  provenance=provenance).written)

    def snapshot_to(self, path: str | os.PathLike) -> None:
        """Consistent copy of the library to `path` (sqlite backup API)."""
        dest = sqlite3.connect(str(path))
        try:
            self.conn.backup(dest)
        finally:
            dest.close()

    def state_bytes(self) -> bytes:
        """The whole database as bytes (for checkpoint payloads)."""
        mem = sqlite3.connect(":memory:")
        try:
            self.conn.backup(mem)
            data = bytearray(mem.serialize())
        finally:
            mem.close()
        data[18] = data[19] = 1  # header: rollback-journal format, so the image deserialises
        return bytes(data)

    @classmethod
    def from_bytes(cls, data: bytes, path: str | os.PathLike, **kwargs) -> "SkillLibrary":
        """Write `state_bytes()` output to `path` (replacing its content) and open it."""
        mem = sqlite3.connect(":memory:")
        try:
            try:
                mem.deserialize(bytes(data))
            except sqlite3.Error as e:
                raise LibraryError(f"not a library image: {e}") from None
            _check_version(mem, "library bytes")
            dest = sqlite3.connect(str(path))
            try:
                mem.backup(dest)
            finally:
                dest.close()
        finally:
            mem.close()
        return cls(path, **kwargs)
