"""Skill1 held-out evaluation: one episode per game with the library frozen, per condition.

Conditions (the learning protocol, benchmarks/results/learning/PROTOCOL.md):
``with_library`` (query -> retrieve -> rerank -> play with the top-1 skill; the library is read,
never updated, nothing is distilled) and ``without_library`` (play with no skill: the paper's
no-library condition). Each episode becomes an :class:`~skillax.evaluation.EpisodeRecord`
(``retrieved`` = skills retrieved, -1 where the condition has no retrieval; extras:
``chosen_skill``, the id of the skill put in the play prompt or None).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from skillax import collectives
from skillax.evaluation import EpisodeRecord
from skillax.methods.skill1.rollout import SELECTION_WORDS, rollout, words_before_play

CONDITIONS = ("with_library", "without_library")


def episode_record(ep) -> EpisodeRecord:
    """The record of one evaluated episode (module docstring)."""
    return EpisodeRecord.from_trajectory(ep.task, ep.trajectory,
                                         retrieved=len(ep.retrieved_ids) if ep.retrieval_on else -1,
                                         chosen_skill=ep.chosen_id)


def evaluate_condition(tasks: Sequence, policy, library, index, pool, play_cfg, rollout_cfg,
                       batch_size: int = 0) -> list[EpisodeRecord]:
    """One episode per task (group size 1) in chunks of ``batch_size`` tasks (0 = all at once:
    one lock-step batch; GPU memory bounds it). Distillation is off whatever ``rollout_cfg``
    says; the library is only read. Several processes (issue 21): each plays its block of every
    chunk (``collectives.share``; the same sampling keys as one process plays them with) and
    every process gets all records, in task order.

    Sampling keys: every chunk draws from a fresh ``policy.evaluation_stream()`` (a private
    counter from ``EVAL_CALL_OFFSET``, the training counter untouched), its episodes carry their
    index in ``tasks`` (``offset``), and a condition without selection words skips them, so game
    e's play turn t keys on (the same word, e) in every pass, condition, arm and chunk size of
    one seed (common random numbers for the paired comparisons). One chunk (``batch_size`` >=
    ``len(tasks)`` or 0) keys exactly as before 2026-12-07; before then a chunk size below the
    split's games keyed a later chunk's game on another word and episode index."""
    rcfg = dataclasses.replace(rollout_cfg, distil="off")
    skip = SELECTION_WORDS - words_before_play(rcfg)    # play words line up across conditions
    n = int(batch_size) if int(batch_size) > 0 else max(len(tasks), 1)
    records = []
    for c in range(0, len(tasks), n):
        chunk = list(tasks[c:c + n])
        lo, hi = collectives.share(len(chunk))          # several processes: this one's block
        stream = policy.evaluation_stream()             # the same words for every chunk
        if skip:
            stream.reserve_calls(skip)
        eps = rollout(chunk[lo:hi], 1, stream, library, index, pool, play_cfg, rcfg, offset=c + lo)
        records += collectives.concat(collectives.allgather_objects([episode_record(ep) for ep in eps]))
    return records


def library_stats(library, bins: int = 10) -> dict:
    """Size and utility histogram over [0, 1]."""
    u = np.array([r.utility for r in library.records()], np.float64)
    hist, edges = np.histogram(u, bins=bins, range=(0.0, 1.0))
    return {"size": int(u.size), "mean_utility": float(u.mean()) if u.size else 0.0,
            "utility_hist": hist.tolist(), "utility_bin_edges": [round(e, 3) for e in edges.tolist()]}
