"""Parsers for Skill1's policy outputs: distil JSON, rerank permutation, retrieval query.

All parsers take model text, never raise, and report failure with a reason. Text before the last
`</think>` (Qwen3 reasoning) is ignored by every parser here.
"""
from __future__ import annotations

import dataclasses
import json
import re

from skillax.skills.skill_md import _BAD_CHARS_RE

SUBTASK_STATUS = ("completed", "incomplete")
DISTIL_FIELDS = ("subtasks", "task_success", "action_lesson", "navigation_lesson", "description_head")
MAX_LESSON_CHARS = 4000
_FENCE_RE = re.compile(r"```json[ \t]*\n?(.*?)```", re.S | re.I)
_RANK_RE = re.compile(r"<rank>(.*?)</rank>", re.S | re.I)


def after_think(text: str) -> str:
    """The text after the last `</think>` (all of it when there is none)."""
    i = text.rfind("</think>")
    return text if i < 0 else text[i + len("</think>"):]


def _clean(s: str) -> str:
    return _BAD_CHARS_RE.sub("", s).strip()


def extract_json_object(text: str) -> tuple[object | None, str | None]:
    """First fenced ```json block if any, else the span from the first '{' to the last '}'.

    Returns (value, None) or (None, reason).
    """
    m = _FENCE_RE.search(text)
    if m:
        span, where = m.group(1).strip(), "```json block"
    else:
        i, j = text.find("{"), text.rfind("}")
        if i < 0 or j < i:
            return None, "no JSON object found (no ```json block and no {...} span)"
        span, where = text[i:j + 1], "{...} span"
    try:
        return json.loads(span), None
    except json.JSONDecodeError as e:
        return None, f"invalid JSON in {where}: {e.msg} at char {e.pos}"
    except RecursionError:
        return None, f"invalid JSON in {where}: nested too deeply"


# ----------------------------------------------------------------------------- distil
@dataclasses.dataclass(frozen=True)
class Subtask:
    name: str
    description: str
    status: str  # "completed" | "incomplete"


@dataclasses.dataclass(frozen=True)
class Distil:
    """Skill1 distilled experience (DESIGN.md §1.3 step 5)."""

    subtasks: tuple[Subtask, ...]
    task_success: bool
    action_lesson: str
    navigation_lesson: str
    description_head: str

    def strategy_text(self) -> str:
        """The strategy stored in the library: the non-empty lessons, labelled, one per line."""
        parts = []
        if self.action_lesson:
            parts.append(f"Action lesson: {self.action_lesson}")
        if self.navigation_lesson:
            parts.append(f"Navigation lesson: {self.navigation_lesson}")
        return "\n".join(parts)


@dataclasses.dataclass(frozen=True)
class DistilParse:
    distil: Distil | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.distil is not None


def _text_field(obj: dict, key: str) -> str:
    v = obj[key]
    if v is None:
        return ""
    if not isinstance(v, str):
        raise ValueError(f"{key} must be a string, got {type(v).__name__}")
    v = _clean(v)
    if len(v) > MAX_LESSON_CHARS:
        raise ValueError(f"{key} has {len(v)} characters (max {MAX_LESSON_CHARS})")
    return v


def parse_distil(text: str) -> DistilParse:
    """Distil output -> DistilParse(Distil) or DistilParse(None, reason).

    Valid when the JSON object has all of `DISTIL_FIELDS`: `subtasks` a list of objects with string
    `name`, `description` and `status` in {completed, incomplete} (case-insensitive);
    `task_success` a bool (or the strings "true"/"false"); `action_lesson`, `navigation_lesson`,
    `description_head` strings (null read as ""), each at most 4000 characters. Extra keys are
    ignored; control characters are removed and text stripped.
    """
    if not isinstance(text, str):
        return DistilParse(None, f"output must be a string, got {type(text).__name__}")
    obj, reason = extract_json_object(after_think(text))
    if reason:
        return DistilParse(None, reason)
    if not isinstance(obj, dict):
        return DistilParse(None, f"distil JSON must be an object, got {type(obj).__name__}")
    missing = [k for k in DISTIL_FIELDS if k not in obj]
    if missing:
        return DistilParse(None, f"missing field(s) {missing}")
    try:
        subs = obj["subtasks"]
        if not isinstance(subs, list):
            raise ValueError(f"subtasks must be a list, got {type(subs).__name__}")
        subtasks = []
        for i, s in enumerate(subs):
            if not isinstance(s, dict):
                raise ValueError(f"subtasks[{i}] must be an object")
            for k in ("name", "description", "status"):
                if not isinstance(s.get(k), str):
                    raise ValueError(f"subtasks[{i}].{k} must be a string")
            status = s["status"].strip().lower()
            if status not in SUBTASK_STATUS:
                raise ValueError(f"subtasks[{i}].status {s['status'][:40]!r} not in {SUBTASK_STATUS}")
            subtasks.append(Subtask(_clean(s["name"]), _clean(s["description"]), status))
        ts = obj["task_success"]
        if isinstance(ts, str) and ts.strip().lower() in ("true", "false"):
            ts = ts.strip().lower() == "true"
        if not isinstance(ts, bool):
            raise ValueError(f"task_success must be a boolean, got {type(ts).__name__}")
        return DistilParse(Distil(tuple(subtasks), ts, _text_field(obj, "action_lesson"),
                                  _text_field(obj, "navigation_lesson"),
                                  _text_field(obj, "description_head")))
    except ValueError as e:
        return DistilParse(None, str(e))


# ----------------------------------------------------------------------------- rank
@dataclasses.dataclass(frozen=True)
class RankParse:
    """`permutation`: 0-based candidate indices, best first, always a full permutation of
    range(n_candidates). `parsed_ok` False on a parse failure (see `parse_rank`)."""

    permutation: tuple[int, ...]
    parsed_ok: bool
    reason: str | None = None
    n_dropped: int = 0
    is_none: bool = False


def parse_rank(text: str, n_candidates: int) -> RankParse:
    """`<rank>3,1,2</rank>` (1-based ids) -> permutation (0-based).

    Ids are separated by commas and/or whitespace; an id that is not a plain integer in
    1..n_candidates, or repeats an earlier id, is dropped (counted in `n_dropped`). The kept ids come
    first, then every unranked candidate in original order. Only the first `<rank>` tag after the
    last `</think>` is read.

    Parse failure (`parsed_ok=False`, identity permutation): no `<rank>...</rank>` tag; no valid id
    left; or `none` when there are >= 2 candidates. `<rank>none</rank>` with < 2 candidates is a
    success (`is_none=True`).
    """
    n = max(int(n_candidates), 0)
    identity = tuple(range(n))
    if not isinstance(text, str):
        return RankParse(identity, False, f"output must be a string, got {type(text).__name__}")
    m = _RANK_RE.search(after_think(text))
    if not m:
        return RankParse(identity, False, "no <rank>...</rank> tag")
    body = m.group(1).strip()
    if body.lower() == "none":
        if n < 2:
            return RankParse(identity, True, None, 0, True)
        return RankParse(identity, False, f"'none' given for {n} candidates", 0, True)
    kept: list[int] = []
    dropped = 0
    for tok in (t for t in re.split(r"[,\s]+", body) if t):
        k = int(tok) if tok.isascii() and tok.isdigit() and len(tok) <= 6 else 0
        if 1 <= k <= n and (k - 1) not in kept:
            kept.append(k - 1)
        else:
            dropped += 1
    if not kept:
        return RankParse(identity, False, f"no valid candidate id in {body[:40]!r}", dropped)
    rest = [i for i in identity if i not in kept]
    return RankParse(tuple(kept + rest), True, None, dropped)


# ----------------------------------------------------------------------------- query
@dataclasses.dataclass(frozen=True)
class QueryParse:
    query: str
    closed: bool       # a `</query>` tag was present
    ok: bool           # query is non-empty
    reason: str | None = None


def parse_query(text: str, max_chars: int = 1024) -> QueryParse:
    """Retrieval query = text up to the first `</query>` (the prompt ends with an open `<query>`).

    If the model repeated `<query>`, the text after the last one is used; reasoning before a
    `</think>` is dropped; whitespace is collapsed; control characters removed; cut to `max_chars`.
    A missing `</query>` is allowed (`closed=False`: the sampler may have stopped on it); an empty
    query is a failure (`ok=False`).
    """
    if not isinstance(text, str):
        return QueryParse("", False, False, f"output must be a string, got {type(text).__name__}")
    i = text.find("</query>")
    q = text[:i] if i >= 0 else text
    q = after_think(q)
    j = q.rfind("<query>")
    if j >= 0:
        q = q[j + len("<query>"):]
    q = " ".join(_BAD_CHARS_RE.sub(" ", q).split())[:max_chars].strip()
    return QueryParse(q, i >= 0, bool(q), None if q else "empty query")
