"""Supervised fine-tuning: next-token NLL on assistant tokens only.

Examples come from chat transcripts rendered by
``skillax.tokenizers.chat.render_with_masks(tokenizer, messages)`` -> ``(ids, assistant_mask)``;
the mask is 1 exactly on assistant-produced tokens. With the trainer's alignment
(``logprobs[:, t] = log p(tokens[:, t] | tokens[:, :t])``) the loss mask *is* the assistant
mask, with position 0 forced to 0.

Loss: ``NLL = -sum_t m_t log p(tokens_t | <t)`` over the batch, returned as (sum, denominator)
with the same aggregation modes as RL (:mod:`skillax.rl.aggregation`; default "token_mean"),
computed with the same chunked fp32 logprob code (:mod:`skillax.rl.logprobs`).

Packing (optional): several examples per row with ``segment_ids`` (1, 2, ... per example, 0 on
padding) and positions restarting at 0 per segment; the first token of each segment is
never a target (it would be predicted from the previous example). Caveat: the model's
``forward`` takes a (B, T) ``valid`` mask, not segment ids, so packed examples attend to
earlier examples of the same row; leave packing off (the default) for exact per-example
conditioning.
"""
from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from skillax.rl import aggregation
from skillax.rl.logprobs import token_logprobs


def make_example(ids: Sequence[int], assistant_mask: Sequence[int], max_len: int, pad_id: int = 0) -> dict:
    """One right-padded SFT row.

    Args:
      ids: token ids (T0,). assistant_mask: (T0,) 0/1, 1 on assistant tokens.
      max_len: row length T; longer transcripts are truncated on the right.
    Returns:
      {"tokens": (T,) int32, "positions": (T,) int32, "valid": (T,) bool,
       "loss_mask": (T,) float32 (assistant mask, 0 at position 0 and on padding),
       "segment_ids": (T,) int32 (1 on the example, 0 on padding)}.
    Raises: ValueError on length mismatch, an empty transcript or no assistant token left.
    """
    if len(ids) != len(assistant_mask):
        raise ValueError(f"ids ({len(ids)}) and assistant_mask ({len(assistant_mask)}) differ in length")
    if len(ids) == 0:
        raise ValueError("empty transcript")
    n = min(len(ids), max_len)
    row = {"tokens": np.full(max_len, pad_id, np.int32), "positions": np.zeros(max_len, np.int32),
           "valid": np.zeros(max_len, bool), "loss_mask": np.zeros(max_len, np.float32),
           "segment_ids": np.zeros(max_len, np.int32)}
    row["tokens"][:n] = np.asarray(ids[:n], np.int32)
    row["positions"][:n] = np.arange(n)
    row["valid"][:n] = True
    row["segment_ids"][:n] = 1
    row["loss_mask"][:n] = np.asarray(assistant_mask[:n], np.float32)
    row["loss_mask"][0] = 0.0
    if not row["loss_mask"].any():
        raise ValueError(f"no assistant token within the first {max_len} tokens")
    return row


def collate(rows: Sequence[dict]) -> dict:
    """Stack rows of equal length into a (B, T) batch dict."""
    if not rows:
        raise ValueError("no rows to collate")
    return {k: np.stack([r[k] for r in rows]) for k in rows[0]}


def pack_examples(examples: Sequence[tuple[Sequence[int], Sequence[int]]], max_len: int,
                  pad_id: int = 0) -> dict:
    """Greedy first-fit packing of (ids, assistant_mask) pairs into rows of ``max_len``.

    Examples longer than max_len are truncated. Returns a (R, max_len) batch dict with
    ``segment_ids`` 1.. per row, positions restarting per segment, and the first token of
    every segment masked out. See the module caveat on attention across segments.
    """
    rows: list[dict] = []
    fill: list[int] = []
    for ids, m in examples:
        ex = make_example(ids, m, max_len, pad_id)
        n = int(ex["valid"].sum())
        j = next((i for i, f in enumerate(fill) if f + n <= max_len), None)
        if j is None:
            rows.append({k: np.zeros_like(v) if k != "tokens" else np.full_like(v, pad_id) for k, v in ex.items()})
            fill.append(0)
            j = len(rows) - 1
        r, s = rows[j], fill[j]
        seg = int(r["segment_ids"].max()) + 1
        for k in ("tokens", "positions", "valid", "loss_mask"):
            r[k][s:s + n] = ex[k][:n]
        r["segment_ids"][s:s + n] = seg
        fill[j] = s + n
    return collate(rows)


def segment_start_mask(segment_ids: jax.Array) -> jax.Array:
    """(B, T) bool: True where position t starts a new segment (t = 0 or seg[t] != seg[t-1])."""
    prev = jnp.pad(segment_ids[:, :-1], ((0, 0), (1, 0)), constant_values=-1)
    return segment_ids != prev


def sft_loss(hidden: jax.Array, head: jax.Array, tokens: jax.Array, loss_mask: jax.Array, *,
             segment_ids: jax.Array | None = None, chunk_size: int | None = 512,
             aggregation_mode: str = "token_mean", max_len: int | None = None
             ) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
    """Masked next-token NLL as (sum, denominator, metric sums).

    Args:
      hidden: (B, T, D) from ``forward``; head: (D, V); tokens: (B, T) int; loss_mask: (B, T).
      segment_ids: (B, T) for packed rows (segment starts are never targets).
      aggregation_mode / max_len: see :mod:`skillax.rl.aggregation`.
    Returns:
      (sum () fp32, denominator () fp32, sums {"nll_sum", "tokens", "confident"}), where
      "confident" counts target tokens with probability > 0.5 (a cheap accuracy proxy that
      needs no argmax over the vocabulary). All sums are additive over micro-batches.
    """
    mask = loss_mask.astype(bool)
    if segment_ids is not None:
        mask = mask & ~segment_start_mask(segment_ids)
    lp, _ = token_logprobs(hidden, head, tokens, chunk_size=chunk_size, mask=mask)
    nll = jnp.where(mask, -lp, 0.0)
    s, d = aggregation.aggregate(nll, mask, aggregation_mode, max_len)
    stats = {"nll_sum": jnp.sum(nll), "tokens": jnp.sum(mask).astype(jnp.float32),
             "confident": jnp.sum(mask & (lp > jnp.log(0.5))).astype(jnp.float32)}
    return s, d, stats
