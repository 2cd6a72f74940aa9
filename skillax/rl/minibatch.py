"""Host-side layout of one rollout batch for the optimiser: mini-batches and length buckets.

Two independent levers of ``PolicyEngine.train`` (numpy only; the device work is
:mod:`skillax.rl.train_step`):

* **Mini-batches and epochs** (``rl.mini_batches`` = k, ``rl.epochs`` = E; verl's
  ``ppo_mini_batch_size`` / ``ppo_epochs``): the rollout batch is split into k mini-batches and
  each becomes one optimiser update, E passes over them (k·E updates per RL step). Old
  logprobs stay the sampler's (the importance ratio is to the behaviour policy) and the
  advantages stay those computed on the whole batch, so only the first update is on-policy:
  later updates see ratio != 1 and engage the PPO clip. Each update normalises by its own
  aggregation denominators (as verl does per mini-batch). A REINFORCE objective (Skill1's
  rerank) has no ratio, so in later updates its gradient is slightly off-policy.
  :func:`minibatch_rows` keeps all rows of one episode in one mini-batch and cuts the
  episodes, in id order, into k contiguous runs; the methods number episodes group-major
  (episode = group · G + i), so a GRPO group stays in one mini-batch whenever the episodes per
  mini-batch are a multiple of G (verl counts ``ppo_mini_batch_size`` in prompts: the same).
  Mini-batches keep their order in every epoch (verl's default ``shuffle: false``).
* **Length buckets** (``train.update_layout = "buckets"``): instead of padding every row of an
  update to the longest row's bucket, :func:`micro_batches` sorts the update's rows by length,
  cuts them into micro-batches of ``train.micro_batch`` rows and pads each micro-batch to its
  own bucket; the gradients are accumulated over the micro-batches with the whole update's
  denominators (``train_step.make_grad_step``), so the update equals the padded one up to fp32
  summation order while its cost follows the rows' lengths.

One diagnostic (``rl.objective_grad_norms_every``): :func:`objective_part` lays out one
objective's term of an update for its own gradient (``PolicyEngine._objective_grad_norms``).

Batch keys that never go to the device: :data:`HOST_KEYS`.
"""
from __future__ import annotations

import bisect
from typing import Mapping, Sequence

import numpy as np

HOST_KEYS = ("num_rows", "dropped_truncated", "episodes")
LAYOUTS = ("buckets", "padded")


def row_lengths(valid) -> np.ndarray:
    """(B,) int64: last valid position + 1 of each right-padded row (0 for an all-invalid row)."""
    v = np.asarray(valid, bool)
    if v.ndim != 2:
        raise ValueError(f"valid must be (B, T), got shape {v.shape}")
    T = v.shape[1]
    last = T - np.argmax(v[:, ::-1], axis=1)
    return np.where(v.any(axis=1), last, 0).astype(np.int64)


def bucket_of(n: int, sizes: Sequence[int]) -> int:
    """Smallest size >= n (``sizes`` ascending); ValueError naming n when none is."""
    i = bisect.bisect_left(list(sizes), n)
    if i == len(sizes):
        raise ValueError(f"sequence of {n} tokens exceeds the largest training bucket {sizes[-1]}")
    return int(sizes[i])


def minibatch_rows(episodes: Sequence[int], k: int) -> list[np.ndarray]:
    """Rows ``0..N-1`` split into at most k mini-batches of whole episodes.

    Args:
      episodes: (N,) episode id of each row (rows of one rollout share it).
      k: wanted mini-batches (>= 1). With fewer than k distinct episodes, one mini-batch per
        episode.
    Returns:
      row indices per mini-batch (ascending within each): the distinct episode ids, sorted, cut
      into contiguous runs whose sizes differ by at most one (``np.array_split``).
    Raises:
      ValueError: k < 1 or no rows.
    """
    if int(k) < 1:
        raise ValueError(f"rl.mini_batches must be >= 1, got {k}")
    ep = np.asarray(episodes, np.int64)
    if ep.size == 0:
        raise ValueError("minibatch_rows needs at least one row")
    ids = np.unique(ep)
    runs = np.array_split(ids, min(int(k), ids.size))
    return [np.flatnonzero(np.isin(ep, run)) for run in runs]


def micro_batches(rows: Sequence[int], lengths: Sequence[int], buckets: Sequence[int],
                  size: int) -> list[tuple[int, np.ndarray]]:
    """Length-bucketed micro-batches of one update.

    Args:
      rows: row indices of the update. lengths: (B,) lengths of all rows (:func:`row_lengths`).
      buckets: allowed padded lengths (ascending). size: rows per micro-batch.
    Returns:
      [(T, idx)]: ``idx`` (size,) row indices, -1 for a padding row (only in the last
      micro-batch); rows sorted by length (stable), cut into runs of ``size``; T the bucket of
      the run's longest row (non-decreasing: equal shapes run back to back).
    """
    rows = np.asarray(rows, np.int64)
    if size < 1:
        raise ValueError(f"micro-batch size must be >= 1, got {size}")
    all_lens = np.asarray(lengths, np.int64)
    order = rows[np.argsort(all_lens[rows], kind="stable")]
    out = []
    for s in range(0, order.size, size):
        idx = order[s:s + size]
        T = bucket_of(max(int(all_lens[idx].max()), 1), buckets)
        out.append((T, np.concatenate([idx, np.full(size - idx.size, -1, np.int64)])))
    return out


def gather(batch: Mapping, idx: Sequence[int], T: int) -> dict:
    """Rows ``idx`` of a host batch (``rl.objectives`` format), columns ``[:T]``; -1 is a
    padding row (invalid, zero masks / advantages / logprobs, positions 0..T-1). ``T`` must
    cover every kept row (the columns cut off must be padding)."""
    idx = np.asarray(idx, np.int64)
    pad = idx < 0
    take = np.where(pad, 0, idx)

    def rows(x, keep_cols=True):
        x = np.asarray(x)
        y = x[take][:, :T] if (x.ndim == 2 and keep_cols) else x[take]
        y = y.copy()
        y[pad] = 0
        return y

    B = int(np.shape(batch["tokens"])[0])
    out = {}
    for key, v in batch.items():
        if key in HOST_KEYS:
            continue
        if key == "objectives":
            out[key] = {n: {k: rows(a) for k, a in ob.items()} for n, ob in v.items()}
        elif np.ndim(v) >= 1 and np.shape(v)[0] == B:
            out[key] = rows(v)
        else:
            raise ValueError(f"batch[{key!r}] is not a per-row array (shape {np.shape(v)})")
    if "positions" in out:
        out["positions"][pad] = np.arange(T, dtype=out["positions"].dtype)
    return out


def objective_part(batch: Mapping, rows: Sequence[int], name: str, lengths: Sequence[int],
                   buckets: Sequence[int], size: int) -> tuple[dict, list[tuple[int, np.ndarray]]]:
    """Objective ``name``'s term of an update on ``rows``, laid out for its own gradient.

    Returns:
      (part, micro): ``part`` = ``batch`` with every other objective's loss mask zeroed (same
      keys and shapes; advantages kept), and ``micro`` = :func:`micro_batches` of the rows of
      ``rows`` holding a token of ``name`` ([] when none does). With the update's denominators,
      the RL loss of these micro-batches of ``part`` is lambda_name num_name / D_name alone: an
      objective's zeroed mask adds 0 to every sum (``rl.objectives.objectives_loss``) and a row
      without ``name``'s tokens adds 0 to its gradient.
    Example: rows 0-3, ``name``'s mask non-zero on rows 1 and 3 -> micro covers rows 1 and 3.
    """
    rows = np.asarray(rows, np.int64)
    mask = np.asarray(batch["objectives"][name]["loss_mask"])
    mine = rows[mask[rows].astype(bool).any(axis=-1)]
    zeroed = lambda ob: {**ob, "loss_mask": np.zeros_like(np.asarray(ob["loss_mask"]))}  # noqa: E731
    part = {**batch, "objectives": {n: ob if n == name else zeroed(ob) for n, ob in batch["objectives"].items()}}
    return part, (micro_batches(mine, lengths, buckets, size) if mine.size else [])


def padded_tokens(lengths: Sequence[int], buckets: Sequence[int], micro_batch: int, layout: str) -> int:
    """Tokens the update computes on (rows x padded length, padding rows included) for rows of
    ``lengths`` in one update: ``"padded"`` = all rows at the longest row's bucket (rows rounded
    up to a multiple of ``micro_batch``), ``"buckets"`` = :func:`micro_batches`."""
    lens = np.asarray(lengths, np.int64)
    if layout == "padded":
        n = -(-lens.size // micro_batch) * micro_batch
        return int(n * bucket_of(int(lens.max()), buckets))
    if layout == "buckets":
        return int(sum(T * idx.size for T, idx in micro_batches(np.arange(lens.size), lens, buckets, micro_batch)))
    raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")


# --------------------------------------------------------------------------- metrics

_MEANS = ("pg_loss", "kl", "entropy", "clip_frac", "dual_clip_frac", "ratio_mean")


def combine_updates(updates: Sequence[Mapping[str, float]], dens: Sequence[Mapping[str, float]],
                    weights: Mapping[str, float], per_epoch: int) -> dict:
    """Metrics of one RL step made of several optimiser updates (token-weighted, as one update).

    Args:
      updates: each update's metrics (``train_step.make_train_step``'s keys, host floats).
      dens: each update's aggregation denominators {objective: D}.
      weights: {objective: lambda}.
      per_epoch: updates per pass over the rollout batch (k); the first k cover every row once.
    Returns:
      ``{name}/{pg_loss, kl, entropy, clip_frac, dual_clip_frac, ratio_mean}`` = token-weighted
      means over all updates; ``{name}/loss`` = sum of numerators / sum of denominators and
      ``loss`` = sum_k lambda_k {k}/loss (one update: exactly its own values);
      ``{name}/tokens``, ``tokens``, ``rows_without_loss_tokens`` of the rollout batch (first
      pass); ``grad_norm`` (mean over updates), ``grad_norm_max``, ``update_skipped``
      (updates skipped), ``lr`` (first update), ``updates`` (count); ``grad_norm_{name}`` (mean
      over updates) where the updates carry it (``rl.objective_grad_norms_every``); with more than
      one update also ``{name}/ratio_mean_later`` and ``{name}/clip_frac_later`` over the
      updates after the first (the off-policy ones).
    """
    if not updates:
        raise ValueError("combine_updates needs at least one update")
    if len(updates) == 1:
        return {**updates[0], "updates": 1}
    out: dict[str, float] = {}
    for name in weights:
        tok = np.array([u[f"{name}/tokens"] for u in updates], np.float64)
        den = np.array([d[name] for d in dens], np.float64)
        loss = np.array([u[f"{name}/loss"] for u in updates], np.float64)
        tsum = tok.sum()
        for m in _MEANS:
            v = np.array([u[f"{name}/{m}"] for u in updates], np.float64)
            out[f"{name}/{m}"] = float((v * tok).sum() / tsum) if tsum > 0 else 0.0
        out[f"{name}/loss"] = float((loss * den).sum() / den.sum()) if den.sum() > 0 else 0.0
        out[f"{name}/tokens"] = float(tok[:per_epoch].sum())
        lt = tok[1:].sum()
        for m in ("ratio_mean", "clip_frac"):
            v = np.array([u[f"{name}/{m}"] for u in updates[1:]], np.float64)
            out[f"{name}/{m}_later"] = float((v * tok[1:]).sum() / lt) if lt > 0 else 0.0
    out["loss"] = float(sum(float(w) * out[f"{n}/loss"] for n, w in weights.items()))
    out["tokens"] = float(sum(out[f"{n}/tokens"] for n in weights))
    g = np.array([u["grad_norm"] for u in updates], np.float64)
    out.update(grad_norm=float(g.mean()), grad_norm_max=float(g.max()),
               update_skipped=float(sum(u["update_skipped"] for u in updates)),
               rows_without_loss_tokens=float(sum(u["rows_without_loss_tokens"] for u in updates[:per_epoch])),
               updates=len(updates))
    for key in (f"grad_norm_{n}" for n in weights):
        if key in updates[0]:
            out[key] = float(np.mean([u[key] for u in updates]))
    if "lr" in updates[0]:
        out["lr"] = float(updates[0]["lr"])
    return out
