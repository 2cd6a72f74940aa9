"""Single-turn reasoning tasks: reasoning-gym generators and AIME 2024/2025.

One episode is one question: ``reset(task)`` shows the problem (plus an answer-format
instruction), ``step(answer_text)`` scores the whole answer and ends the episode.

Sources:

* ``reasoning-gym`` (PyPI; procedural, seeded, each generator ships its reference scorer).
  :data:`RG_TOPICS` groups the generators used by default into topics -- SkillOS groups
  reasoning tasks by topic (DESIGN.md §1.2) -- so ``Task.family`` is the topic by default
  (``family_by="dataset"`` uses the generator name). Item ``i`` of a split is item ``i`` of
  ``reasoning_gym.create_dataset(name, seed=seed, size=n)``; the default seed is derived from
  the split name (``zlib.crc32(split)``) so train and test never share a seed.
* AIME 2024 / 2025 (``../shared/data/aime/aime_<year>.jsonl``, 30 problems each, integer
  answers 0–999, README there). ``Task.family`` is ``"aime"``.

Scoring (:mod:`skillax.agents.verifiers`): AIME by ``math-verify`` equivalence of the gold
integer and the answer text (``\\boxed{033}`` = ``33``); reasoning-gym by the generator's
``score_answer`` on the extracted final answer (last ``<answer>`` tag, else last
``\\boxed{}``, else the whole stripped text). Several generators give partial credit
(e.g. 0.11 for a near-miss number); with ``binary_reward=True`` (default) the reward is
1.0 only for a full-score answer, else 0.0, and ``won`` is always ``score == 1``.
"""
from __future__ import annotations

import json
import logging
import os
import zlib
from typing import Any, Iterable, Sequence

from skillax.agents.envs.base import Task
from skillax.agents.verifiers import extract_answer, math_equal, reasoning_gym_score

log = logging.getLogger(__name__)

ENV_NAME = "reasoning"

RG_TOPICS: dict[str, tuple[str, ...]] = {
    "arithmetic": ("basic_arithmetic", "chain_sum", "decimal_arithmetic"),
    "algebra": ("simple_equations", "polynomial_equations"),
    "word_problems": ("gsm_symbolic",),
    "counting": ("leg_counting", "letter_counting"),
    "sorting": ("number_sorting", "word_sorting"),
    "number_theory": ("gcd", "lcm", "base_conversion"),
    "logic": ("syllogism", "family_relationships"),
    "time": ("calendar_arithmetic", "time_intervals"),
}
DATASET_TOPIC = {d: t for t, ds in RG_TOPICS.items() for d in ds}
DEFAULT_PROMPT_SUFFIX = "\n\nPut your final answer within \\boxed{}."
AIME_YEARS = (2024, 2025)
_AIME_KEYS = ("id", "year", "exam", "number", "problem", "answer")


def split_seed(split: str) -> int:
    """Default generator seed of a split: ``zlib.crc32(split)`` (stable across runs)."""
    return zlib.crc32(split.encode("utf-8"))


def reasoning_gym_tasks(datasets: Iterable[str] | None = None, *, n_per_dataset: int = 8,
                        split: str = "train", seed: int | None = None,
                        family_by: str = "topic",
                        configs: dict[str, dict[str, Any]] | None = None) -> list[Task]:
    """Generate reasoning-gym tasks.

    Args:
      datasets: generator names (default: all of :data:`RG_TOPICS`); names outside it get
        topic ``"other"``.
      n_per_dataset: items per generator.
      split: split name stored on the tasks (and the default seed source).
      seed: generator seed; default :func:`split_seed` ``(split)``.
      family_by: ``"topic"`` or ``"dataset"``: what ``Task.family`` holds.
      configs: optional per-generator keyword arguments for ``create_dataset`` (difficulty).

    Returns:
      ``len(datasets) * n_per_dataset`` tasks, id ``"rg/<name>/<seed>/<index>"``; payload
      holds ``source="reasoning_gym"``, ``dataset``, ``seed``, ``size``, ``index``, ``config``
      and ``entry`` (question, answer, metadata) -- everything the env needs to score.

    Raises:
      ValueError: unknown ``family_by`` or ``n_per_dataset < 1``; reasoning-gym raises for an
        unknown generator name.
    """
    import reasoning_gym

    if family_by not in ("topic", "dataset"):
        raise ValueError(f"family_by must be 'topic' or 'dataset', got {family_by!r}")
    if n_per_dataset < 1:
        raise ValueError(f"n_per_dataset must be >= 1, got {n_per_dataset}")
    names = list(datasets) if datasets is not None else [d for ds in RG_TOPICS.values() for d in ds]
    seed = split_seed(split) if seed is None else int(seed)
    tasks = []
    for name in names:
        cfg = dict((configs or {}).get(name, {}))
        ds = reasoning_gym.create_dataset(name, seed=seed, size=n_per_dataset, **cfg)
        topic = DATASET_TOPIC.get(name, "other")
        for i in range(n_per_dataset):
            e = ds[i]
            entry = {"question": e["question"], "answer": e["answer"], "metadata": e.get("metadata", {})}
            tasks.append(Task(
                id=f"rg/{name}/{seed}/{i}", env=ENV_NAME,
                family=topic if family_by == "topic" else name, goal=e["question"], split=split,
                attributes={"topic": topic, "dataset": name},
                payload={"source": "reasoning_gym", "dataset": name, "seed": seed,
                         "size": n_per_dataset, "index": i, "config": cfg, "entry": entry}))
    return tasks


def load_aime(data_dir: str | os.PathLike, years: Sequence[int] = AIME_YEARS, *,
              split: str = "test", missing_ok: bool = True) -> list[Task]:
    """AIME problems as tasks (README: ``../shared/data/aime/README.md``).

    Args:
      data_dir: folder holding ``aime_<year>.jsonl``.
      years: which years to load.
      split: split name stored on the tasks.
      missing_ok: when True, an absent folder or file is skipped with a warning (the data
        lives only in ``../shared``); when False it raises FileNotFoundError.

    Returns:
      tasks with id ``"aime/<year>-<exam>-<number>"``, family ``"aime"``, goal = problem,
      attributes ``year``/``exam``/``number``/``has_diagram_code``, payload
      ``source="aime"``, ``answer`` (str integer).

    Raises:
      ValueError: a malformed line -- message ``"<file>:<line>: <what is wrong>"``.
    """
    tasks: list[Task] = []
    for year in years:
        path = os.path.join(os.fspath(data_dir), f"aime_{year}.jsonl")
        if not os.path.exists(path):
            if not missing_ok:
                raise FileNotFoundError(f"AIME file not found: {path}")
            log.warning("AIME %s skipped: %s not found", year, path)
            continue
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                tasks.append(_aime_task(json_line(path, lineno, line), path, lineno, split))
    return tasks


def json_line(path: str, lineno: int, line: str) -> dict:
    """Decode one JSONL line; ValueError ``"<path>:<lineno>: ..."`` when it is not an object."""
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{lineno}: invalid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(rec, dict):
        raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(rec).__name__}")
    return rec


def _aime_task(rec: dict, path: str, lineno: int, split: str) -> Task:
    missing = [k for k in _AIME_KEYS if k not in rec]
    if missing:
        raise ValueError(f"{path}:{lineno}: missing field(s) {missing}")
    ans = rec["answer"]
    if not isinstance(ans, str) or not ans.strip().isdigit():
        raise ValueError(f"{path}:{lineno}: answer must be a string holding an integer, got {ans!r}")
    if not isinstance(rec["problem"], str) or not rec["problem"].strip():
        raise ValueError(f"{path}:{lineno}: problem must be a non-empty string")
    return Task(id=f"aime/{rec['id']}", env=ENV_NAME, family="aime", goal=rec["problem"], split=split,
                attributes={"year": rec["year"], "exam": rec["exam"], "number": rec["number"],
                            "has_diagram_code": bool(rec.get("has_diagram_code", False))},
                payload={"source": "aime", "answer": ans.strip()})


class ReasoningEnv:
    """Single-turn question answering (follows :class:`skillax.agents.envs.base.Env`).

    Args:
      prompt_suffix: appended to the question in the observation (answer format).
      binary_reward: reward 1.0 only for a full score (see module docstring).
      verify_timeout_s: math-verify time limit per answer (main thread only).

    ``reset`` -> ``(question + suffix, info)``; ``step(answer_text)`` -> ``("", reward, True,
    info)`` with info keys ``won``, ``admissible_commands`` (``[]``: free text), ``step``,
    ``invalid`` (empty answer), plus ``score`` (raw scorer value), ``extracted`` (the final
    answer found, or None) and ``gold``. Answers are free text of any length (a full
    solution), so the 256-character action cap of the interactive envs does not apply.
    """

    max_steps = 1

    def __init__(self, prompt_suffix: str = DEFAULT_PROMPT_SUFFIX, binary_reward: bool = True,
                 verify_timeout_s: int | None = 5) -> None:
        self.prompt_suffix = prompt_suffix
        self.binary_reward = binary_reward
        self.verify_timeout_s = verify_timeout_s
        self._datasets: dict[str, Any] = {}
        self.task: Task | None = None
        self._done = True

    def reset(self, task: Task) -> tuple[str, dict]:
        """Start an episode on ``task``. Raises ValueError for a task this env cannot score."""
        src = task.payload.get("source")
        if src not in ("aime", "reasoning_gym"):
            raise ValueError(f"task {task.id!r}: payload.source must be 'aime' or 'reasoning_gym', got {src!r}")
        self.task, self._done = task, False
        return task.goal + self.prompt_suffix, self._info(won=False, step=0, invalid=False)

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        """Score the answer and end the episode. Raises RuntimeError when no episode is open."""
        if self.task is None or self._done:
            raise RuntimeError("step() called without an open episode; call reset(task) first")
        self._done = True
        text = action if isinstance(action, str) else ""
        invalid = not text.strip()
        p = self.task.payload
        if p["source"] == "aime":
            extracted = extract_answer(text)
            score = 0.0 if invalid else (1.0 if math_equal(p["answer"], text, timeout_s=self.verify_timeout_s) else 0.0)
            gold = p["answer"]
        else:
            extracted = extract_answer(text)
            answer = extracted if extracted is not None else (text.strip() or None)
            score = reasoning_gym_score(self._dataset(p), p["entry"], answer)
            gold = p["entry"]["answer"]
        won = score >= 1.0
        reward = (1.0 if won else 0.0) if self.binary_reward else score
        info = self._info(won=won, step=1, invalid=invalid)
        info.update(score=score, extracted=extracted, gold=gold)
        return "", reward, True, info

    def close(self) -> None:
        self._datasets.clear()

    def _dataset(self, p: dict) -> Any:
        import reasoning_gym

        key = json.dumps([p["dataset"], p["seed"], p["size"], p.get("config", {})], sort_keys=True)
        if key not in self._datasets:
            self._datasets[key] = reasoning_gym.create_dataset(
                p["dataset"], seed=p["seed"], size=p["size"], **p.get("config", {}))
        return self._datasets[key]

    @staticmethod
    def _info(*, won: bool, step: int, invalid: bool) -> dict:
        return {"won": won, "admissible_commands": [], "step": step, "invalid": invalid}
