"""Which sampling programs a method's calls can reach, so they compile before RL step 0.

Every fresh ``Sampler.generate`` call runs the program of its shape key (rows B, prefill rows
Bp, chunk T, new-token bucket, cache slots, shared or not; ``Sampler.builds``). A key that step 0
did not meet builds when it first appears: 8-15 s on the H200 in the middle of a timed step
(issue 17; ``benchmarks/results/rl_loop.md``: play histories walk through the chunk buckets 384 /
512 / 768, each with a shared and an unshared program). A method describes each stage's calls
as a :class:`StageCalls` (how many rows, how many distinct prompts, the prompt lengths in tokens,
the sampling settings); :func:`stage_shapes` turns it into the :class:`ProgramShape` set the
sampler would run, deciding rows, chunk, cache and sharing exactly as ``Sampler.plan`` does, and
``Sampler.precompile`` runs each once on padding tokens before the loop starts.

The set covers every call whose real rows, distinct prompts and longest prompt fall in the
stage's ranges (a budget-split call, ``model.sampler_memory_gb``, runs other shapes: not covered).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence


@dataclasses.dataclass(frozen=True, order=True)
class ProgramShape:
    """One sampling program of a fresh call (the static part of ``Sampler.builds``' key).

    batch: rows B the call pads to; prefill_rows: rows of its prefill (Bp < B when shared, else
    B); chunk: prompt chunk length T (tokens); new_bucket: decode buffer length (tokens);
    cache_len: KV cache slots S; shared: one prefill per distinct prompt; stop_strings: the call
    has stop strings (the device byte-matching branch); mode: ``engine.sampling.sampling_mode``
    ("greedy" | "sample" | "truncate").
    """

    batch: int
    prefill_rows: int
    chunk: int
    new_bucket: int
    cache_len: int
    shared: bool
    stop_strings: bool = False
    mode: str = "sample"

    def key(self) -> tuple:
        """(batch, prefill_rows, chunk, new_bucket, cache_len, shared): the fields a
        ``Sampler.builds`` record shares with this shape (:func:`build_key`)."""
        return (self.batch, self.prefill_rows, self.chunk, self.new_bucket, self.cache_len, self.shared)


def build_key(record: dict) -> tuple:
    """The :meth:`ProgramShape.key` of a ``Sampler.builds`` record (or a logged
    ``sampler_builds.jsonl`` line)."""
    return (int(record["batch"]), int(record["prefill_rows"]), int(record["chunk"]),
            int(record["new_bucket"]), int(record["cache_len"]), bool(record["shared"]))


@dataclasses.dataclass(frozen=True)
class StageCalls:
    """The fresh sampler calls one stage of a method makes (one or many per step).

    name: the stage ("query", "play", ...), for reports.
    rows: real rows (prompts x n) a call may have: (lo, hi), both inclusive.
    distinct: distinct prompts among a call's rows: (lo, hi), capped at the call's rows.
    prompt_tokens: the shortest and the longest prompt of the stage, (lo, hi) tokens; a call's
      chunk is the bucket of its longest prompt, so every prompt bucket from lo's to hi's.
    max_new_tokens: the stage's completion budget (tokens).
    stop_strings: the stage's calls stop on strings; mode: ``sampling_mode`` of its settings.
    Raises ValueError on an empty or reversed range or a non-positive value.
    """

    name: str
    rows: tuple[int, int]
    distinct: tuple[int, int]
    prompt_tokens: tuple[int, int]
    max_new_tokens: int
    stop_strings: bool = False
    mode: str = "sample"

    def __post_init__(self):
        for f in ("rows", "distinct", "prompt_tokens"):
            lo, hi = getattr(self, f)
            if not 1 <= int(lo) <= int(hi):
                raise ValueError(f"StageCalls({self.name}).{f} must be 1 <= lo <= hi, got {(lo, hi)}")
        if self.max_new_tokens < 1:
            raise ValueError(f"StageCalls({self.name}).max_new_tokens must be >= 1, got {self.max_new_tokens}")


def prompt_chunks(sampler, lo: int, hi: int, max_new: int) -> list[tuple[int, int]]:
    """(chunk T, new-token bucket) pairs of fresh calls whose longest prompt is lo..hi tokens
    (``engine.buckets.chunk_and_new`` with the sampler's buckets and max_len; prompts that do not
    fit max_len with ``max_new`` are dropped: the sampler refuses them)."""
    budget = sampler.max_len - max_new
    return sorted({sampler._chunk_and_new(L, max_new, 0) for L in range(lo, min(hi, budget) + 1)})


def stage_shapes(sampler, stage: StageCalls, params=None) -> set[ProgramShape]:
    """Every :class:`ProgramShape` a call of ``stage`` can run on ``sampler``: each real row
    count n and distinct-prompt count d <= n in the stage's ranges, padded and shared exactly as
    ``Sampler.plan`` decides (``params``: the sampler's weights, for the sharing and attention
    decisions of sharded params; None = unsharded)."""
    out: set[ProgramShape] = set()
    pairs = set(_row_pairs(sampler, stage, params))
    for T, n_new in prompt_chunks(sampler, stage.prompt_tokens[0], stage.prompt_tokens[1], stage.max_new_tokens):
        S = sampler.buckets.cache_len(T + n_new, sampler.max_len)
        for B, Bp in pairs:
            out.add(ProgramShape(B, Bp or B, T, n_new, S, Bp > 0, stage.stop_strings, stage.mode))
    return out


def _row_pairs(sampler, stage: StageCalls, params) -> Iterable[tuple[int, int]]:
    """(batch B, shared prefill rows Bp or 0) of every (rows n, distinct d) of ``stage``."""
    shares = sampler._shares(params)
    for n in range(stage.rows[0], stage.rows[1] + 1):
        B = sampler.buckets.pick("batch", n)
        for d in range(stage.distinct[0], min(stage.distinct[1], n) + 1):
            yield B, (sampler._shared_rows(d, n, B) if shares else 0)


def predicted_shapes(sampler, stages: Sequence[StageCalls], params=None) -> list[ProgramShape]:
    """The union of :func:`stage_shapes` over ``stages``, sorted (a stable compile order)."""
    out: set[ProgramShape] = set()
    for st in stages:
        out |= stage_shapes(sampler, st, params)
    return sorted(out)


def precompile_enabled(value, backend: str) -> bool:
    """``model.precompile``: "auto" -> True on an accelerator ("gpu", "tpu"), False on "cpu"
    (tests and CPU runs do not pay for programs they may never run); True / False (or the strings
    "true" / "false", any case) as given. Raises ValueError on anything else."""
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v == "auto":
        return backend != "cpu"
    if v in ("true", "false"):
        return v == "true"
    raise ValueError(f"model.precompile must be 'auto', true or false, got {value!r}")
