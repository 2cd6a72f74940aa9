"""LLM judges that run on any :class:`~skillax.agents.workers.base.Worker`.

* :class:`RubricJudge` -- CL-Bench-style all-or-nothing rubric grading (Tencent-Hunyuan
  CL-bench, ``eval.py``; arXiv 2602.03587): the judge sees the question, the answer and a
  numbered rubric list, and returns JSON with one ``"yes"``/``"no"`` per rubric. Score 1 iff
  every rubric is met (and the judge's own overall score, when given, is 1); an empty answer
  scores 0 without a judge call; a judgement that cannot be parsed is re-asked up to
  ``max_retries`` times and then scores 0 (counted in :class:`JudgeStats`), as upstream.
* :class:`ContentJudge` -- SkillOS's content-quality reward r_cnt (DESIGN.md §1.2; the paper
  uses Qwen3-32B as judge): the judge rates a skill repository on four criteria
  (:data:`CONTENT_CRITERIA`) with integers 0..``scale``; the score is their mean divided by
  ``scale``, in [0, 1]. Empty repository -> 0 without a call; unparsable after retries -> 0.

Batching: every item of a ``judge`` call goes to the worker in one ``chat`` batch; items
whose reply does not parse are re-asked together, with the latest bad reply and a correction
appended as a follow-up turn (so a deterministic cached worker does not return the same
bad reply again).
"""
from __future__ import annotations

import dataclasses
import json
import re
import threading
from typing import Any, Callable, Sequence

from skillax.agents.workers.base import Worker

CONTENT_CRITERIA = ("specificity", "actionability", "correctness", "non_redundancy")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_YES = {"yes", "y", "true", "1", "met", "pass", "satisfied"}
_NO = {"no", "n", "false", "0", "unmet", "not met", "fail", "not satisfied"}
_RETRY_NOTE = ("Your previous reply could not be used: {why}. Reply again with ONLY the JSON "
               "object in the required format.")


def parse_json_object(text: str) -> dict | None:
    """The JSON object in a judge reply: ``<think>`` blocks and Markdown code fences are
    ignored; the whole reply is tried first, then the last top-level ``{...}`` span that parses.
    Returns None when no JSON object is found."""
    t = _THINK.sub("", text or "").strip()
    t = re.sub(r"^```(?:json)?\s*|\s*```$", "", t).strip()
    try:
        obj = json.loads(t)
        return obj if isinstance(obj, dict) else None
    except json.JSONDecodeError:
        pass
    dec = json.JSONDecoder()
    best, i = None, t.find("{")
    while i >= 0:  # top-level objects only: resume after each parsed span
        try:
            obj, end = dec.raw_decode(t, i)
        except json.JSONDecodeError:
            i = t.find("{", i + 1)
            continue
        best = obj
        i = t.find("{", end)
    return best


@dataclasses.dataclass
class JudgeStats:
    """Counters of one judge (thread-safe).

    Attributes:
      items: items judged (returned verdicts).
      requests: worker completions requested (first asks + re-asks).
      retries: re-asks after an unparsable reply or a worker error.
      unparsable: items that still had no valid judgement after all retries (scored 0).
      worker_errors: worker completions that came back with ``error`` set.
      empty: items scored 0 without a call (empty answer / empty repository).
    """

    items: int = 0
    requests: int = 0
    retries: int = 0
    unparsable: int = 0
    worker_errors: int = 0
    empty: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, **d: int) -> None:
        with self._lock:
            for k, v in d.items():
                setattr(self, k, getattr(self, k) + v)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _ask_with_retries(worker: Worker, convs: list[list[dict]], parsers: Sequence[Callable[[str], Any]],
                      stats: JudgeStats, max_retries: int, temperature: float,
                      max_tokens: int) -> list[tuple[Any, int, str | None]]:
    """Send ``convs``; re-ask those whose reply fails its parser (``parsers[i]`` returns the
    parsed value or raises ValueError with a reason). Returns per conversation
    ``(parsed or None, attempts, error or None)``."""
    results: list[tuple[Any, int, str | None]] = [(None, 0, "not asked")] * len(convs)
    pending = list(range(len(convs)))
    base = [list(c) for c in convs]
    convs = [list(c) for c in convs]
    for attempt in range(max_retries + 1):
        if not pending:
            break
        if attempt:
            stats.add(retries=len(pending))
        stats.add(requests=len(pending))
        outs = worker.chat([convs[i] for i in pending], temperature=temperature, max_tokens=max_tokens)
        still = []
        for i, out in zip(pending, outs):
            if out.error is not None:
                stats.add(worker_errors=1)
                results[i] = (None, attempt + 1, f"worker error: {out.error}")
                still.append(i)
                continue
            try:
                results[i] = (parsers[i](out.text), attempt + 1, None)
            except ValueError as e:
                results[i] = (None, attempt + 1, f"unparsable judgement: {e}")
                convs[i] = base[i] + [{"role": "assistant", "content": out.text},
                                       {"role": "user", "content": _RETRY_NOTE.format(why=e)}]
                still.append(i)
        pending = still
    stats.add(unparsable=len(pending))
    return results


# --------------------------------------------------------------------------- rubric judge


@dataclasses.dataclass(frozen=True)
class RubricItem:
    """One answer to grade: the question it answers and the rubric requirements."""

    question: str
    answer: str
    rubrics: Sequence[str]


@dataclasses.dataclass(frozen=True)
class RubricVerdict:
    """Result of :meth:`RubricJudge.judge` for one item.

    Attributes:
      score: 1.0 iff every rubric is met, else 0.0.
      statuses: per-rubric met flags (empty when no valid judgement was obtained).
      rationale: the judge's grading rationale ("" if none).
      attempts: judge calls spent on this item (0 for an empty answer).
      error: None, ``"empty answer"``, or why no valid judgement was obtained.
    """

    score: float
    statuses: tuple[bool, ...] = ()
    rationale: str = ""
    attempts: int = 0
    error: str | None = None


RUBRIC_PROMPT = """You are a strict grader. Grade the answer below against the rubrics.

Grading rules:
- The grade is all-or-nothing: the answer scores 1 only if it fully satisfies every rubric; if any rubric is not fully met, it scores 0.
- Check every rubric on its own, in order, against the answer only (not against what the answer might have meant). Format, content, quantity and order requirements all count.
- Before the final score, check that you reviewed every rubric, did not relax any requirement, and that the score agrees with your per-rubric statuses.

[Question]
{question}

[Rubrics]
{rubrics}

[Answer to grade]
{answer}

Reply with ONLY this JSON object (no other text):
{{
  "Grading Rationale": "<short rationale>",
  "List of Requirement Satisfaction Status": [<exactly {n} entries, each "yes" or "no", in rubric order>],
  "Overall Score": <1 if every entry is "yes", else 0>
}}"""


def _status(v: Any) -> bool:
    s = str(v).strip().lower()
    if s in _YES:
        return True
    if s in _NO:
        return False
    raise ValueError(f"status {v!r} is not yes/no")


class RubricJudge:
    """All-or-nothing rubric grading (see module docstring).

    Args:
      worker: any Worker (remote judge model or a local one).
      max_retries: re-asks after an unparsable reply or a worker error (CL-bench uses 3
        attempts in total, i.e. ``max_retries=2``).
      temperature, max_tokens: sampling of the judge.
    """

    def __init__(self, worker: Worker, *, max_retries: int = 2, temperature: float = 0.0,
                 max_tokens: int = 2048) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.worker, self.max_retries = worker, max_retries
        self.temperature, self.max_tokens = temperature, max_tokens
        self.stats = JudgeStats()

    @staticmethod
    def prompt(item: RubricItem) -> str:
        """The judge prompt for one item (rubrics numbered from 1)."""
        rubrics = "\n".join(f"{i}. {r.strip()}" for i, r in enumerate(item.rubrics, 1))
        return RUBRIC_PROMPT.format(question=item.question.strip(), rubrics=rubrics,
                                    answer=item.answer.strip(), n=len(item.rubrics))

    @staticmethod
    def parse(text: str, n_rubrics: int) -> tuple[tuple[bool, ...], float, str]:
        """``(statuses, score, rationale)`` from a judge reply. Raises ValueError when the
        reply has no JSON object, no status list of length ``n_rubrics``, a non yes/no
        status, or an ``Overall Score`` other than 0/1."""
        obj = parse_json_object(text)
        if obj is None:
            raise ValueError("no JSON object found")
        statuses = obj.get("List of Requirement Satisfaction Status")
        if not isinstance(statuses, list):
            raise ValueError("missing list 'List of Requirement Satisfaction Status'")
        if len(statuses) != n_rubrics:
            raise ValueError(f"{len(statuses)} statuses for {n_rubrics} rubrics")
        flags = tuple(_status(s) for s in statuses)
        score = 1.0 if all(flags) else 0.0
        if "Overall Score" in obj:
            overall = obj["Overall Score"]
            if str(overall).strip() not in ("0", "1"):
                raise ValueError(f"'Overall Score' must be 0 or 1, got {overall!r}")
            score = min(score, float(str(overall).strip()))  # inconsistent judge -> 0
        return flags, score, str(obj.get("Grading Rationale", ""))

    def judge(self, items: Sequence[RubricItem]) -> list[RubricVerdict]:
        """Grade a batch of items (one worker batch per retry round).

        Raises ValueError when an item has no rubrics."""
        for k, it in enumerate(items):
            if not it.rubrics or not all(isinstance(r, str) and r.strip() for r in it.rubrics):
                raise ValueError(f"items[{k}] needs a non-empty list of non-empty rubric strings")
        verdicts: list[RubricVerdict | None] = [None] * len(items)
        todo = []
        for k, it in enumerate(items):
            if not (it.answer or "").strip():
                verdicts[k] = RubricVerdict(0.0, error="empty answer")
                self.stats.add(empty=1)
            else:
                todo.append(k)
        convs = [[{"role": "user", "content": self.prompt(items[k])}] for k in todo]
        parsers = [lambda t, n=len(items[k].rubrics): self.parse(t, n) for k in todo]
        results = _ask_with_retries(self.worker, convs, parsers, self.stats, self.max_retries,
                                    self.temperature, self.max_tokens)
        for k, (parsed, attempts, err) in zip(todo, results):
            if parsed is None:
                verdicts[k] = RubricVerdict(0.0, attempts=attempts, error=err)
            else:
                flags, score, why = parsed
                verdicts[k] = RubricVerdict(score, flags, why, attempts)
        self.stats.add(items=len(items))
        return verdicts  # type: ignore[return-value]

    def score(self, question: str, answer: str, rubrics: Sequence[str]) -> float:
        """Convenience: the score of a single item."""
        return self.judge([RubricItem(question, answer, list(rubrics))])[0].score


# --------------------------------------------------------------------------- content judge


@dataclasses.dataclass(frozen=True)
class ContentVerdict:
    """Result of :meth:`ContentJudge.judge` for one repository.

    Attributes:
      score: mean of the criteria, each divided by the scale, in [0, 1] (0 on failure).
      criteria: per-criterion score in [0, 1] (empty on failure).
      attempts: judge calls spent (0 for an empty repository).
      error: None, ``"empty repository"``, or why no valid judgement was obtained.
    """

    score: float
    criteria: dict[str, float] = dataclasses.field(default_factory=dict)
    attempts: int = 0
    error: str | None = None


CONTENT_PROMPT = """You review a library of agent skills (procedural notes an agent reads before acting). Rate the library as a whole on each criterion with an integer from 0 (worst) to {scale} (best):

- specificity: concrete, situation-specific guidance (named objects, commands, conditions) rather than generic advice.
- actionability: an agent can follow it step by step; it says what to do and when.
- correctness: the guidance is accurate and would not mislead an agent.
- non_redundancy: skills do not repeat or contradict each other; each adds something.

[Skill library]
{repo}

Reply with ONLY this JSON object (no other text):
{{"specificity": <int>, "actionability": <int>, "correctness": <int>, "non_redundancy": <int>}}"""


class ContentJudge:
    """Content-quality score of a skill repository for SkillOS's r_cnt (see module doc).

    Args:
      worker: any Worker.
      max_retries: re-asks after an unparsable reply or a worker error.
      scale: top of the integer rating scale (ratings 0..scale).
      temperature, max_tokens: sampling of the judge.
    """

    def __init__(self, worker: Worker, *, max_retries: int = 2, scale: int = 10,
                 temperature: float = 0.0, max_tokens: int = 1024) -> None:
        if max_retries < 0 or scale < 1:
            raise ValueError("max_retries must be >= 0 and scale >= 1")
        self.worker, self.max_retries, self.scale = worker, max_retries, scale
        self.temperature, self.max_tokens = temperature, max_tokens
        self.stats = JudgeStats()

    @staticmethod
    def render_repo(repo: str | Sequence[str]) -> str:
        """A repository as prompt text: a string as is, a list of SKILL.md texts numbered."""
        if isinstance(repo, str):
            return repo.strip()
        return "\n\n".join(f"### Skill {i}\n{s.strip()}" for i, s in enumerate(repo, 1) if s.strip())

    def parse(self, text: str) -> dict[str, float]:
        """Per-criterion scores in [0, 1]. Accepts ``{"c": 7}`` or ``{"c": {"score": 7}}``.
        Raises ValueError for a missing criterion or a rating outside 0..scale."""
        obj = parse_json_object(text)
        if obj is None:
            raise ValueError("no JSON object found")
        out = {}
        for c in CONTENT_CRITERIA:
            v = obj.get(c, obj.get(c.replace("_", "-")))
            if isinstance(v, dict):
                v = v.get("score")
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"criterion {c!r} missing or not a number")
            if not 0 <= v <= self.scale:
                raise ValueError(f"criterion {c!r} = {v} outside 0..{self.scale}")
            out[c] = float(v) / self.scale
        return out

    def judge(self, repos: Sequence[str | Sequence[str]]) -> list[ContentVerdict]:
        """Score each repository (one worker batch per retry round)."""
        texts = [self.render_repo(r) for r in repos]
        verdicts: list[ContentVerdict | None] = [None] * len(texts)
        todo = [k for k, t in enumerate(texts) if t]
        for k, t in enumerate(texts):
            if not t:
                verdicts[k] = ContentVerdict(0.0, error="empty repository")
                self.stats.add(empty=1)
        convs = [[{"role": "user", "content": CONTENT_PROMPT.format(scale=self.scale, repo=texts[k])}]
                 for k in todo]
        results = _ask_with_retries(self.worker, convs, [self.parse] * len(convs), self.stats,
                                    self.max_retries,
                                    self.temperature, self.max_tokens)
        for k, (crit, attempts, err) in zip(todo, results):
            if crit is None:
                verdicts[k] = ContentVerdict(0.0, attempts=attempts, error=err)
            else:
                verdicts[k] = ContentVerdict(sum(crit.values()) / len(crit), crit, attempts)
        self.stats.add(items=len(texts))
        return verdicts  # type: ignore[return-value]
