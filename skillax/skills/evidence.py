"""Skill-alpha evidence preprocessing: documents and trajectories -> ordered evidence chunks.

DESIGN.md §1.1 (paper: "documents are split into ordered chunks at natural paragraphs;
trajectories are serialised as a compact view (task identity, key steps, environment feedback)
with at most 4 trajectories per chunk, 8 steps per trajectory, 3000 characters per trajectory,
and the prompt capped at 8192 tokens"). `units_per_chunk` (default 4; the paper's best, 1/2/8
were worse) is a config knob, for paragraphs and trajectories alike.

Truncation always keeps the beginning and the outcome:
* > max_steps steps: the first max_steps-1 steps and the last step, with an "[... k steps
  omitted ...]" line between (counter key "steps").
* > max_chars characters: the head of the text, a marker, then the whole `Outcome:` line
  (counter key "chars").
* prompt > max_tokens (`fit_prompt`): trailing units are dropped first ("units_dropped"; the
  caller may carry them to the next chunk), then the single remaining unit is cut in the middle
  ("prompt"). Every truncation is counted in the `collections.Counter` passed in / returned.
"""
from __future__ import annotations

import collections
import dataclasses
import re
from typing import Callable, Sequence

MARKER = "\n[... truncated ...]\n"
_PARA_RE = re.compile(r"\n[ \t]*\n+")


@dataclasses.dataclass(frozen=True)
class EvidenceConfig:
    units_per_chunk: int = 4       # trajectories (or paragraphs) per chunk
    max_steps: int = 8             # steps kept per trajectory
    max_traj_chars: int = 3000     # characters per rendered trajectory
    max_paragraph_chars: int = 3000
    max_prompt_tokens: int = 8192

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if getattr(self, f.name) < 1:
                raise ValueError(f"EvidenceConfig.{f.name} must be >= 1, got {getattr(self, f.name)}")


@dataclasses.dataclass(frozen=True)
class TrajStep:
    action: str
    observation: str = ""


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """One episode. `outcome` is the final environment verdict, e.g. 'success (reward 1)'."""

    task_id: str
    task: str
    steps: tuple[TrajStep, ...]
    outcome: str


@dataclasses.dataclass(frozen=True)
class EvidenceChunk:
    index: int
    kind: str                       # "document" | "trajectory"
    units: tuple[str, ...]

    @property
    def text(self) -> str:
        return format_units(self.units)


def format_units(units: Sequence[str], title: str = "Evidence") -> str:
    """'### Evidence 1\\n<unit>\\n\\n### Evidence 2\\n...'."""
    return "\n\n".join(f"### {title} {i + 1}\n{u}" for i, u in enumerate(units))


def truncate_middle(text: str, max_chars: int, marker: str = MARKER, tail_frac: float = 0.25) -> str:
    """Keep the head and the last `tail_frac` of the budget, joined by `marker`; len <= max_chars."""
    if len(text) <= max_chars:
        return text
    if max_chars <= len(marker):
        return text[:max_chars]
    budget = max_chars - len(marker)
    tail = int(budget * tail_frac)
    return text[: budget - tail] + marker + (text[len(text) - tail:] if tail else "")


def _compact(s: str) -> str:
    return " ".join(str(s).split())


def split_paragraphs(text: str, max_chars: int = 3000) -> list[str]:
    """Paragraphs (split at blank lines, CRLF-normalised, stripped, empties dropped), in order;
    a paragraph longer than `max_chars` is split at the last whitespace before the limit."""
    out = []
    for p in _PARA_RE.split(text.replace("\r\n", "\n").replace("\r", "\n")):
        p = p.strip()
        while len(p) > max_chars:
            cut = p.rfind(" ", 0, max_chars + 1)
            cut = cut if cut > max_chars // 2 else max_chars
            out.append(p[:cut].rstrip())
            p = p[cut:].lstrip()
        if p:
            out.append(p)
    return out


def chunk_document(text: str, cfg: EvidenceConfig = EvidenceConfig()) -> list[EvidenceChunk]:
    """A document -> ordered chunks of `cfg.units_per_chunk` consecutive paragraphs."""
    paras = split_paragraphs(text, cfg.max_paragraph_chars)
    k = cfg.units_per_chunk
    return [EvidenceChunk(i, "document", tuple(paras[j:j + k]))
            for i, j in enumerate(range(0, len(paras), k))]


def render_trajectory(traj: Trajectory, cfg: EvidenceConfig = EvidenceConfig(),
                      counter: collections.Counter | None = None) -> str:
    """Compact view: 'Task [id]: ...', 'Step i: > action' + '  feedback' lines, 'Outcome: ...'."""
    counter = collections.Counter() if counter is None else counter
    steps = list(traj.steps)
    idx = list(range(len(steps)))
    omitted = 0
    if len(steps) > cfg.max_steps:
        keep = cfg.max_steps - 1
        omitted = len(steps) - cfg.max_steps
        idx = idx[:keep] + [len(steps) - 1]
        counter["steps"] += 1
    lines = [f"Task [{_compact(traj.task_id)}]: {_compact(traj.task)}"]
    for n, i in enumerate(idx):
        if omitted and n == len(idx) - 1:
            lines.append(f"[... {omitted} steps omitted ...]")
        lines.append(f"Step {i + 1}: > {_compact(steps[i].action)}")
        if _compact(steps[i].observation):
            lines.append(f"  {_compact(steps[i].observation)}")
    outcome = "Outcome: " + truncate_middle(_compact(traj.outcome), max(cfg.max_traj_chars // 4, 1))
    head = "\n".join(lines)
    text = head + "\n" + outcome
    if len(text) > cfg.max_traj_chars:
        counter["chars"] += 1
        budget = cfg.max_traj_chars - len(outcome) - len(MARKER)
        text = head[:budget] + MARKER + outcome if budget > 0 \
            else truncate_middle(text, cfg.max_traj_chars)
    return text


def chunk_trajectories(trajs: Sequence[Trajectory], cfg: EvidenceConfig = EvidenceConfig(),
                       counter: collections.Counter | None = None) -> list[EvidenceChunk]:
    """Trajectories (in order) -> chunks of at most `cfg.units_per_chunk` rendered trajectories."""
    counter = collections.Counter() if counter is None else counter
    units = [render_trajectory(t, cfg, counter) for t in trajs]
    k = cfg.units_per_chunk
    return [EvidenceChunk(i, "trajectory", tuple(units[j:j + k]))
            for i, j in enumerate(range(0, len(units), k))]


@dataclasses.dataclass(frozen=True)
class FitResult:
    prompt: str
    n_units: int                    # units kept (the first n_units of the input)
    n_tokens: int
    over_budget: bool               # True if even the shortest prompt exceeds max_tokens
    truncations: collections.Counter


def fit_prompt(build: Callable[[Sequence[str]], str], units: Sequence[str],
               count_tokens: Callable[[str], int], max_tokens: int = 8192,
               counter: collections.Counter | None = None) -> FitResult:
    """Largest prompt `build(units')` with count_tokens <= max_tokens (see module docstring).

    Args:
      build: units -> full prompt text (instructions + current skill + evidence).
      units: evidence units in order.
      count_tokens: text -> number of tokens (e.g. len(tokenizer.encode(text))).
    """
    counter = collections.Counter() if counter is None else counter
    units = list(units)
    prompt = build(units)
    n_tok = count_tokens(prompt)
    while n_tok > max_tokens and len(units) > 1:
        units.pop()
        counter["units_dropped"] += 1
        prompt = build(units)
        n_tok = count_tokens(prompt)
    if n_tok > max_tokens and units:
        counter["prompt"] += 1
        lo, hi, best = 0, len(units[0]) - 1, None
        while lo <= hi:  # largest char budget that fits
            mid = (lo + hi) // 2
            cand = build([truncate_middle(units[0], mid)])
            c = count_tokens(cand)
            if c <= max_tokens:
                best, lo = (cand, c), mid + 1
            else:
                hi = mid - 1
        if best is None:
            prompt, n_tok = build([""]), count_tokens(build([""]))
        else:
            prompt, n_tok = best
    return FitResult(prompt, len(units), n_tok, n_tok > max_tokens, counter)
