"""Success rates with 95 % intervals, per task type, and paired differences between arms.

* :func:`wilson_interval` -- Wilson score interval of a binomial proportion (Wilson 1927;
  the interval recommended by Brown, Cai & DasGupta 2001 for small n and p near 0 or 1).
* :func:`paired_bootstrap` -- percentile bootstrap of the mean paired difference (resample
  games with replacement; both arms keep their outcome on each resampled game).
* :func:`paired_delta` -- joins two arms' records on ``task_id`` and reports the difference,
  its bootstrap interval, the discordant counts and McNemar's exact two-sided p-value.
* :func:`pooled_paired_delta` -- the same difference pooled over runs (seeds) that played the
  same games: per-game mean over runs, bootstrap over games.
* :func:`paired_steps` -- the same pairing for episode length: whether the skills change *how*
  a reader plays (all games, a loss counting its cap, and the games won in both arms).
* :func:`seed_spread` -- the mean of per-seed paired differences with a Student-t 95 %
  interval over seeds (the between-seed spread a single seed's bootstrap cannot show).
* :func:`summarize` -- one arm's summary (success, Wilson interval, per task type, mean steps,
  invalid-action rate, retrieval rate).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from skillax.evaluation.records import EpisodeRecord

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for ``successes`` out of ``n``.

    Returns (lo, hi) in [0, 1]; (0.0, 1.0) for n = 0. Example: 0/10 -> (0.0, 0.2775);
    5/10 -> (0.2366, 0.7634). Raises ValueError unless 0 <= successes <= n.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_bootstrap(a: Sequence[float], b: Sequence[float], n_boot: int = 10000, seed: int = 0,
                     level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Mean of ``b - a`` over paired items and its percentile bootstrap interval.

    Args: a, b: outcomes of the same items under two arms (same order, same length >= 1).
    Returns (delta, (lo, hi)). Raises ValueError on unequal or empty inputs.
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"paired_bootstrap needs two equal-length non-empty 1-D sequences, got {a.shape}, {b.shape}")
    d = b - a
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(int(n_boot), d.size))
    boots = d[idx].mean(axis=1)
    alpha = (1.0 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1.0 - alpha])
    return float(d.mean()), (float(lo), float(hi))


def mcnemar_exact_p(b_only: int, a_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (binomial test, p = 1/2)."""
    n = b_only + a_only
    if n == 0:
        return 1.0
    k = min(b_only, a_only)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return float(min(1.0, 2.0 * tail))


def _by_id(records: Sequence[EpisodeRecord]) -> dict[str, EpisodeRecord]:
    out = {}
    for r in records:
        if r.task_id in out:
            raise ValueError(f"duplicate task_id {r.task_id!r}: one episode per game per arm")
        out[r.task_id] = r
    return out


def paired_delta(baseline: Sequence[EpisodeRecord], arm: Sequence[EpisodeRecord], n_boot: int = 10000,
                 seed: int = 0, require_same_games: bool = True) -> dict:
    """Success of ``arm`` minus ``baseline`` on the games both evaluated.

    Returns {"n", "delta", "delta_ci95", "arm_only", "baseline_only", "mcnemar_p"}. With
    ``require_same_games`` (the protocol's pairing) a game evaluated by one arm only raises
    ValueError naming it; otherwise the intersection is used.
    """
    a, b = _by_id(baseline), _by_id(arm)
    common = sorted(set(a) & set(b))
    if require_same_games and (set(a) ^ set(b)):
        odd = sorted(set(a) ^ set(b))[:3]
        raise ValueError(f"arms evaluated different games (e.g. {odd}); the protocol pairs every game")
    if not common:
        raise ValueError("no game evaluated by both arms")
    ya = [float(a[i].won) for i in common]
    yb = [float(b[i].won) for i in common]
    delta, ci = paired_bootstrap(ya, yb, n_boot=n_boot, seed=seed)
    b_only = sum(1 for x, y in zip(ya, yb) if y > x)
    a_only = sum(1 for x, y in zip(ya, yb) if x > y)
    return {"n": len(common), "delta": delta, "delta_ci95": [ci[0], ci[1]], "arm_only": b_only,
            "baseline_only": a_only, "mcnemar_p": mcnemar_exact_p(b_only, a_only)}


def pooled_paired_delta(pairs: Sequence[tuple[Sequence[EpisodeRecord], Sequence[EpisodeRecord]]],
                        n_boot: int = 10000, seed: int = 0) -> dict:
    """Success of arm minus baseline pooled over runs (seeds) that evaluated the same games.

    Args: pairs: one (baseline records, arm records) per run, e.g. seed k's full arm without and
    with its library. Every run must pair the same games (the protocol's held-out split).
    n_boot: bootstrap resamples (>= 1); seed: the resampling RNG's seed.
    For each game the per-run outcomes are averaged (a game's mean success over the k runs);
    the interval is the paired percentile bootstrap over games of those means -- a cluster
    bootstrap with the game as the unit, since a game's runs are not independent of each other.
    This is the game-level counterpart of :func:`seed_spread` (runs as the unit): it answers
    "on these games, does the change help on average over the seeds", not "would another seed".

    Returns {"runs", "n" (games), "delta", "delta_ci95", "arm_only", "baseline_only" (discordant
    (run, game) pairs summed over runs), "mcnemar_p" (of those sums; treats the pairs as
    independent, so it is optimistic where a game's runs agree), "per_run": [delta per run]}.
    Example: run 1 wins game g1 only with the arm, run 2 loses both games under both ->
    per-game means (g0, g1) baseline (0, 0), arm (0, 0.5), delta 0.25. Ours (issue 18, campaign 12). Raises
    ValueError for no runs, n_boot < 1, a repeated game within a run or runs that evaluated other
    games.
    """
    if not pairs:
        raise ValueError("pooled_paired_delta needs at least one (baseline, arm) run")
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    games = None
    ya, yb, per_run, b_only, a_only = {}, {}, [], 0, 0
    for k, (baseline, arm) in enumerate(pairs):
        base, alt = _by_id(baseline), _by_id(arm)
        if set(base) != set(alt):
            raise ValueError(f"run {k}: its two arms evaluated different games (e.g. {sorted(set(base) ^ set(alt))[:3]})")
        if games is None:
            games = set(base)
        elif set(base) != games:
            raise ValueError(f"run {k} evaluated other games than run 0 (e.g. {sorted(set(base) ^ games)[:3]})")
        if not base:
            raise ValueError(f"run {k} has no games")
        for i in base:
            ya[i] = ya.get(i, 0.0) + float(base[i].won)
            yb[i] = yb.get(i, 0.0) + float(alt[i].won)
        per_run.append(sum(float(alt[i].won) - float(base[i].won) for i in base) / len(base))
        b_only += sum(1 for i in base if alt[i].won and not base[i].won)      # won only by the arm
        a_only += sum(1 for i in base if base[i].won and not alt[i].won)     # won only by the baseline
    ids = sorted(games)
    k = len(pairs)
    delta, ci = paired_bootstrap([ya[i] / k for i in ids], [yb[i] / k for i in ids], n_boot=n_boot, seed=seed)
    return {"runs": k, "n": len(ids), "delta": delta, "delta_ci95": [ci[0], ci[1]], "arm_only": b_only,
            "baseline_only": a_only, "mcnemar_p": mcnemar_exact_p(b_only, a_only), "per_run": per_run}


def paired_steps(baseline: Sequence[EpisodeRecord], arm: Sequence[EpisodeRecord], cap: int,
                 n_boot: int = 10000, seed: int = 0) -> dict:
    """Episode length (steps) of ``arm`` minus ``baseline`` on the games both evaluated.

    A lost game keeps the steps it played (the step cap when it timed out). Returns
    {"n", "mean_steps": [baseline, arm], "delta_steps", "delta_steps_ci95" (paired percentile
    bootstrap), "won_both" (games won under both), "delta_steps_won_both" and its ci95 (None
    when no game is won under both), "per_type_won_both" {short type: [games, baseline mean
    steps, arm mean steps]}, "losses": [baseline, arm], "losses_at_cap": [baseline, arm] (lost
    with ``steps >= cap``)}. Ours (issue 18, campaign 7: the readers play games they win anyway
    2-5 steps shorter with skills, while success does not move). Raises ValueError when the two
    share no game or a game repeats within one arm.
    """
    a, b = _by_id(baseline), _by_id(arm)
    ids = sorted(set(a) & set(b))
    if not ids:
        raise ValueError("no game evaluated by both arms")
    d, ci = paired_bootstrap([a[i].steps for i in ids], [b[i].steps for i in ids], n_boot=n_boot, seed=seed)
    both = [i for i in ids if a[i].won and b[i].won]
    out = {"n": len(ids), "mean_steps": [sum(a[i].steps for i in ids) / len(ids), sum(b[i].steps for i in ids) / len(ids)],
           "delta_steps": d, "delta_steps_ci95": [ci[0], ci[1]], "won_both": len(both),
           "delta_steps_won_both": None, "delta_steps_won_both_ci95": None, "per_type_won_both": {},
           "losses": [sum(not x[i].won for i in ids) for x in (a, b)],
           "losses_at_cap": [sum(not x[i].won and x[i].steps >= cap for i in ids) for x in (a, b)]}
    if both:
        d, ci = paired_bootstrap([a[i].steps for i in both], [b[i].steps for i in both], n_boot=n_boot, seed=seed)
        out["delta_steps_won_both"], out["delta_steps_won_both_ci95"] = d, [ci[0], ci[1]]
        for t in sorted({a[i].short_type for i in both}):
            g = [i for i in both if a[i].short_type == t]
            out["per_type_won_both"][t] = [len(g), sum(a[i].steps for i in g) / len(g), sum(b[i].steps for i in g) / len(g)]
    return out


def seed_spread(deltas: Sequence[float], level: float = 0.95) -> dict:
    """Mean of per-seed differences (one paired ``delta`` per independently trained seed) and
    the Student-t interval of that mean: mean +- t_{(1+level)/2, k-1} * sd / sqrt(k), sd the
    sample standard deviation (ddof 1). Seeds are the unit here, not games: the interval
    answers "would another training seed give a gain", which a per-seed game bootstrap does not.

    Returns {"k", "mean", "sd", "ci95": [lo, hi]}. Example: [0.1, 0.3] -> mean 0.2,
    sd 0.1414, ci95 [-1.0706, 1.4706] (t_{0.975,1} = 12.706). Raises ValueError for < 2 seeds.
    """
    from scipy.stats import t as student_t

    d = np.asarray(deltas, np.float64)
    if d.ndim != 1 or d.size < 2:
        raise ValueError(f"seed_spread needs >= 2 per-seed deltas, got {d.size}")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    half = float(student_t.ppf((1.0 + level) / 2, d.size - 1)) * sd / math.sqrt(d.size)
    return {"k": int(d.size), "mean": mean, "sd": sd, "ci95": [mean - half, mean + half]}


def _play_rates(records: Sequence[EpisodeRecord]) -> tuple[dict[str, float] | None, float | None]:
    """({parse-failure reason: its steps / steps}, env-rejected steps / steps) over the records
    that store them (``env_invalid`` not None: written since 2026-12-05); (None, None) when
    none does. The reason rates then sum to those records' invalid-action rate."""
    known = [r for r in records if r.env_invalid is not None]
    if not known:
        return None, None
    steps = max(sum(r.steps for r in known), 1)
    counts: dict[str, int] = {}
    for r in known:
        for why, c in r.invalid_reasons.items():
            counts[why] = counts.get(why, 0) + c
    return {why: c / steps for why, c in sorted(counts.items())}, sum(r.env_invalid for r in known) / steps


def summarize(records: Sequence[EpisodeRecord]) -> dict:
    """One arm on one split: {"n", "successes", "success", "ci95", "per_type" {type: [wins, n]},
    "mean_steps", "invalid_action_rate", "invalid_reasons" {reason: rate}, "env_invalid_rate",
    "failed", "retrieval_rate"} (rates per step; the two play rates over the records that
    store them, None when none does: records module docstring).

    ``per_type`` uses ALFWorld's short names (Pick, Look, Clean, Heat, Cool, Pick2) where they
    apply. ``retrieval_rate`` = share of episodes with >= 1 skill in context, over the records
    whose condition retrieves (``retrieved >= 0``); None when none does. Empty input raises.
    """
    if not records:
        raise ValueError("summarize needs at least one record")
    _by_id(records)
    n = len(records)
    k = sum(r.won for r in records)
    per_type: dict[str, list[int]] = {}
    for r in records:
        w = per_type.setdefault(r.short_type, [0, 0])
        w[0] += int(r.won)
        w[1] += 1
    steps = sum(r.steps for r in records)
    ret = [r for r in records if r.retrieved >= 0]
    reasons, env_rate = _play_rates(records)
    lo, hi = wilson_interval(k, n)
    return {"n": n, "successes": k, "success": k / n, "ci95": [lo, hi],
            "per_type": dict(sorted(per_type.items())), "mean_steps": steps / n,
            "invalid_action_rate": sum(r.invalid_actions for r in records) / max(steps, 1),
            "invalid_reasons": reasons, "env_invalid_rate": env_rate,
            "failed": sum(r.failed for r in records),
            "retrieval_rate": (sum(r.retrieved > 0 for r in ret) / len(ret)) if ret else None}
