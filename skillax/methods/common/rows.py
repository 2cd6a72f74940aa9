"""Generation records -> the trainer's right-padded batch (ARCHITECTURE.md, rl.objectives).

A ``Generation`` is one sampled completion of the policy: the exact prompt token ids it was
conditioned on, the completion ids (stop token included), and the per-token logprobs the
sampler reported under the distribution it drew from. Every row of a training batch is one
generation: ``tokens = prompt + completion``; ``loss_mask`` is 1 on the completion tokens of
the row's objective only (prompt text — task, skills, environment observations — is context
and carries no loss: PITFALLS 12); ``old_logprobs`` are aligned so that
``old_logprobs[:, t]`` scores ``tokens[:, t]``.
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Sequence

import numpy as np


@dataclasses.dataclass
class Generation:
    """One sampled completion.

    Attributes:
      prompt_ids: token ids fed to the sampler (chat-templated prompt).
      completion_ids: sampled ids up to and including the stop token.
      logprobs: (len(completion_ids),) sampler logprobs (temperature applied).
      objective: which objective's loss mask the completion joins ("util", "rerank", "distil", ...).
      episode: index of the rollout this generation belongs to (advantages are per episode).
      stop_reason: "eos" | "stop" | "length" (a "length" row is truncated: PITFALLS 11).
      text: decoded completion (for logs).
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    objective: str
    episode: int
    stop_reason: str = "eos"
    text: str = ""

    def __post_init__(self):
        if len(self.completion_ids) != len(self.logprobs):
            raise ValueError(f"completion has {len(self.completion_ids)} ids but "
                             f"{len(self.logprobs)} logprobs")
        if not self.prompt_ids:
            raise ValueError("a generation needs a non-empty prompt")

    @property
    def length(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)


def bucket(n: int, sizes: Sequence[int]) -> int:
    """Smallest size >= n; ValueError naming n when none is."""
    i = bisect.bisect_left(list(sizes), n)
    if i == len(sizes):
        raise ValueError(f"sequence of {n} tokens exceeds the largest training bucket {sizes[-1]}")
    return sizes[i]


def build_batch(gens: Sequence[Generation], advantages: dict[str, np.ndarray],
                objectives: Sequence[str], *, length_buckets: Sequence[int],
                rows_multiple: int = 1, drop_truncated: bool = False, pad_id: int = 0) -> dict:
    """Pack generations into the ``skillax.rl.objectives`` batch format.

    Args:
      gens: N generations.
      advantages: {objective: (N,) float} per-row advantage (only rows of that objective use it).
      objectives: all configured objective names (an objective with no rows gets an all-zero
        mask: zero contribution, counted as 0 tokens).
      length_buckets: allowed padded lengths T (one compiled train step per bucket).
      rows_multiple: pad the row count up to a multiple of this (micro-batch size); padded rows
        are all-invalid with zero masks.
      drop_truncated: overlong filtering (PITFALLS 11): rows with stop_reason "length" keep
        their reward in the group statistics (already used for the advantages) but get a zero
        loss mask.
    Returns:
      dict with tokens/positions/valid/old_logprobs (B, T) and objectives/{name}/{loss_mask,
      advantages}, plus host-only keys (``skillax.rl.minibatch.HOST_KEYS``, never sent to the
      device): "num_rows" (real rows), "dropped_truncated" and "episodes" (B,) int32 (each
      row's ``Generation.episode``, -1 on padded rows: ``rl.mini_batches`` keeps an episode's
      rows together).
    """
    if not gens:
        raise ValueError("build_batch needs at least one generation")
    T = bucket(max(g.length for g in gens), length_buckets)
    n = len(gens)
    B = -(-n // rows_multiple) * rows_multiple
    tokens = np.full((B, T), pad_id, np.int32)
    valid = np.zeros((B, T), bool)
    old_lp = np.zeros((B, T), np.float32)
    masks = {o: np.zeros((B, T), np.float32) for o in objectives}
    advs = {o: np.zeros((B,), np.float32) for o in objectives}
    episodes = np.full((B,), -1, np.int32)
    dropped = 0
    for i, g in enumerate(gens):
        episodes[i] = g.episode
        if g.objective not in masks:
            raise ValueError(f"generation {i} has objective {g.objective!r}, not one of {list(objectives)}")
        p, c = len(g.prompt_ids), len(g.completion_ids)
        tokens[i, :p] = g.prompt_ids
        tokens[i, p:p + c] = g.completion_ids
        valid[i, :p + c] = True
        old_lp[i, p:p + c] = g.logprobs
        if drop_truncated and g.stop_reason == "length":
            dropped += 1
        else:
            masks[g.objective][i, p:p + c] = 1.0
        a = float(advantages[g.objective][i])
        if not np.isfinite(a):
            raise ValueError(f"non-finite advantage {a} for generation {i} ({g.objective})")
        advs[g.objective][i] = a
    positions = np.broadcast_to(np.arange(T, dtype=np.int32), (B, T)).copy()
    return {
        "tokens": tokens, "positions": positions, "valid": valid, "old_logprobs": old_lp,
        "objectives": {o: {"loss_mask": masks[o], "advantages": advs[o]} for o in objectives},
        "num_rows": n, "dropped_truncated": dropped, "episodes": episodes,
    }


def generations_from_sample(out, prompts: Sequence[Sequence[int]], objective: str,
                            episodes: Sequence[int], texts: Sequence[str] | None = None
                            ) -> list[Generation]:
    """Wrap a ``SampleOutput`` (one row per prompt, n=1) into generations."""
    gens = []
    for i, prompt in enumerate(prompts):
        n = int(out.lengths[i])
        gens.append(Generation(
            prompt_ids=list(prompt), completion_ids=out.tokens[i, :n].tolist(),
            logprobs=out.logprobs[i, :n].astype(float).tolist(), objective=objective,
            episode=int(episodes[i]), stop_reason=out.stop_reason[i],
            text=(texts[i] if texts is not None else (out.texts[i] if out.texts else ""))))
    return gens
