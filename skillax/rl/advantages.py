"""Group-relative advantages: GRPO (mean/std), mean-only (SkillOS), Dr.GRPO, raw (REINFORCE).

Groups are keyed by an explicit integer ``group_ids`` array (one id per rollout), never by
row position, so rollouts of one prompt may sit anywhere in the batch.

Two implementations of the same formulas:

* host functions (:func:`group_advantages`, :func:`grpo_advantages`, ...) take numpy-like
  inputs, validate them (NaN/inf rewards, empty groups, shape mismatch -> ``ValueError``) and
  compute in float64. Rewards live on the host, so this is what the method loops call.
* :func:`group_advantages_jnp` is a pure, jittable twin using ``jax.ops.segment_*`` with a
  static ``num_groups``. It cannot raise on data, so validate on the host first.

Zero-variance groups (PITFALLS 1): a group whose ``max - min <= tiny`` gets advantages of
exactly ``0.0`` -- we never divide an fp residue of ``r - mean`` by a residue std. With
Bessel-corrected std (``ddof=1``) every advantage obeys ``|A| <= (G-1)/sqrt(G)`` (the bound is
attained by a (G-1)-vs-1 split; the ``eps`` in the denominator keeps it strictly below).

Std convention per method (PITFALLS 2; G = 2, rewards (0, 1) -> +-0.7071 with ddof=1,
+-1.0 with ddof=0):

* Skill-alpha GRPO, Skill1 util and Skill1 distil: ``ddof=1`` (unbiased std, as verl's
  ``compute_grpo_outcome_advantage`` (``torch.std``) and TRL's ``GRPOTrainer`` use).
* SkillOS: mean-only ``A = r - mean`` (paper Sec. 3: "advantage A_n = r_n - mean over the N
  rollouts of the same group"); no std, so ddof is irrelevant.
* Dr.GRPO (Liu et al. 2025, "Understanding R1-Zero-like training", Eq. 3): ``A = r - mean``
  -- numerically identical to mean-only; Dr.GRPO's other change is the loss aggregation
  (``seq_mean_token_sum_norm`` in :mod:`skillax.rl.aggregation`).
* Skill1 rerank: ``raw`` -- REINFORCE on the raw NDCG reward, no group normalisation
  (candidate sets differ across a group).
"""
from __future__ import annotations

from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

#: Estimators by name -> (subtract group mean, divide by group std).
ESTIMATORS: dict[str, tuple[bool, bool]] = {
    "grpo": (True, True),
    "mean": (True, False),
    "drgrpo": (True, False),
    "raw": (False, False),
}

DEFAULT_EPS = 1e-6   # added to the std in the denominator
DEFAULT_TINY = 1e-9  # a group with max - min <= tiny is a zero-variance group


def _check_estimator(estimator: str) -> tuple[bool, bool]:
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown advantage estimator {estimator!r}; choose one of {sorted(ESTIMATORS)}")
    return ESTIMATORS[estimator]


def validate_rewards(rewards, group_ids, num_groups: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Check host-side rewards and group ids; return them as (float64, int64, num_groups).

    Args:
      rewards: (N,) real rewards, one per rollout.
      group_ids: (N,) non-negative integer group ids.
      num_groups: if given, ids must lie in [0, num_groups) and every group must be non-empty;
        if None, it is ``max(group_ids) + 1`` and every id below it must be used.

    Raises:
      ValueError: empty input, shape mismatch, non-integer / negative / out-of-range ids,
        NaN or inf rewards (naming the offending rows), or an empty group.
    """
    r = np.asarray(rewards)
    g = np.asarray(group_ids)
    if r.ndim != 1 or g.ndim != 1:
        raise ValueError(f"rewards and group_ids must be 1-D; got shapes {r.shape} and {g.shape}")
    if r.shape != g.shape:
        raise ValueError(f"rewards {r.shape} and group_ids {g.shape} must have the same shape")
    if r.size == 0:
        raise ValueError("no rewards given (empty batch)")
    if not np.issubdtype(g.dtype, np.integer):
        raise ValueError(f"group_ids must be integers, got dtype {g.dtype}")
    r = r.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(r))
    if bad.size:
        raise ValueError(f"non-finite rewards at rows {bad[:10].tolist()}: {r[bad[:10]].tolist()}")
    if g.min() < 0:
        raise ValueError(f"group_ids must be >= 0, got min {g.min()}")
    n_groups = int(g.max()) + 1 if num_groups is None else int(num_groups)
    if g.max() >= n_groups:
        raise ValueError(f"group id {g.max()} out of range for num_groups={n_groups}")
    counts = np.bincount(g, minlength=n_groups)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise ValueError(f"empty groups (no rollouts) for group ids {empty[:10].tolist()}")
    return r, g.astype(np.int64), n_groups


def group_advantages(
    rewards,
    group_ids,
    estimator: str = "grpo",
    *,
    ddof: int = 1,
    eps: float = DEFAULT_EPS,
    tiny: float = DEFAULT_TINY,
    num_groups: int | None = None,
) -> np.ndarray:
    """Group-relative advantages on the host, float64 in, float32 out.

    ``A_i = (r_i - mean_g) / (std_g(ddof) + eps)`` for "grpo"; ``r_i - mean_g`` for "mean" /
    "drgrpo"; ``r_i`` for "raw". Groups with ``max - min <= tiny`` get exactly 0.0 (except
    for "raw", which never looks at groups). A group of one rollout is a zero-variance group.

    Args:
      rewards: (N,) rewards. group_ids: (N,) int group ids (see :func:`validate_rewards`).
      estimator: one of :data:`ESTIMATORS`.
      ddof: std degrees of freedom for "grpo" (1 = unbiased; the default for Skill-alpha and
        Skill1, following verl/TRL).
    Returns:
      (N,) float32 advantages.
    Raises:
      ValueError: see :func:`validate_rewards`; unknown estimator; ddof not in {0, 1}.
    Source: GRPO (Shao et al. 2024, DeepSeekMath Eq. 3 outcome supervision); SkillOS Sec. 3.
    """
    center, scale = _check_estimator(estimator)
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    r, g, n_groups = validate_rewards(rewards, group_ids, num_groups)
    if not center:
        return r.astype(np.float32)
    counts = np.bincount(g, minlength=n_groups).astype(np.float64)
    mean = np.bincount(g, weights=r, minlength=n_groups) / counts
    gmax = np.full(n_groups, -np.inf)
    gmin = np.full(n_groups, np.inf)
    np.maximum.at(gmax, g, r)
    np.minimum.at(gmin, g, r)
    flat = (gmax - gmin) <= tiny
    dev = r - mean[g]
    if scale:
        ss = np.bincount(g, weights=dev * dev, minlength=n_groups)
        std = np.sqrt(ss / np.maximum(counts - ddof, 1.0))
        dev = dev / (std[g] + eps)
    return np.where(flat[g], 0.0, dev).astype(np.float32)


def grpo_advantages(rewards, group_ids, *, ddof: int = 1, **kw) -> np.ndarray:
    """GRPO advantages ``(r - mean) / (std + eps)``; see :func:`group_advantages`."""
    return group_advantages(rewards, group_ids, "grpo", ddof=ddof, **kw)


def mean_advantages(rewards, group_ids, **kw) -> np.ndarray:
    """SkillOS / Dr.GRPO advantages ``r - mean`` (no std); see :func:`group_advantages`."""
    return group_advantages(rewards, group_ids, "mean", **kw)


def zero_variance_groups(rewards, group_ids, *, tiny: float = DEFAULT_TINY,
                         num_groups: int | None = None) -> np.ndarray:
    """(N,) bool: True for rollouts whose group has ``max - min <= tiny`` (all-equal rewards).

    Used with ``zero_variance="drop"`` to remove such rows from the loss mask (PITFALLS 3).
    """
    r, g, n_groups = validate_rewards(rewards, group_ids, num_groups)
    gmax = np.full(n_groups, -np.inf)
    gmin = np.full(n_groups, np.inf)
    np.maximum.at(gmax, g, r)
    np.minimum.at(gmin, g, r)
    return ((gmax - gmin) <= tiny)[g]


def multi_objective_advantages(
    rewards: Mapping[str, object],
    group_ids: Mapping[str, object] | object,
    estimators: Mapping[str, str],
    *,
    ddof: int | Mapping[str, int] = 1,
    eps: float = DEFAULT_EPS,
    tiny: float = DEFAULT_TINY,
) -> dict[str, np.ndarray]:
    """Separately normalised advantages for several objectives of one batch.

    Each objective k has its own rewards (N_k,), group ids and estimator and is normalised on
    its own (Skill1 Sec. 3.4: util GRPO on r(tau), rerank raw NDCG, distil GRPO on
    r - max U with its own statistics). ``group_ids`` may be one array shared by all
    objectives or a mapping per objective.

    Returns: {name: (N_k,) float32}. Raises ValueError naming the objective on bad input.
    """
    out = {}
    if set(rewards) != set(estimators):
        raise ValueError(f"rewards keys {sorted(rewards)} != estimators keys {sorted(estimators)}")
    for name, r in rewards.items():
        g = group_ids[name] if isinstance(group_ids, Mapping) else group_ids
        d = ddof[name] if isinstance(ddof, Mapping) else ddof
        try:
            out[name] = group_advantages(r, g, estimators[name], ddof=d, eps=eps, tiny=tiny)
        except ValueError as e:
            raise ValueError(f"objective {name!r}: {e}") from None
    return out


def group_advantages_jnp(
    rewards: jax.Array,
    group_ids: jax.Array,
    num_groups: int,
    estimator: str = "grpo",
    *,
    ddof: int = 1,
    eps: float = DEFAULT_EPS,
    tiny: float = DEFAULT_TINY,
) -> jax.Array:
    """Jittable twin of :func:`group_advantages` (``num_groups`` and ``estimator`` static).

    Args: rewards (N,) float; group_ids (N,) int32 in [0, num_groups).
    Returns: (N,) float32. No validation: NaN rewards propagate and empty groups are simply
    unused -- call :func:`validate_rewards` on the host first.
    """
    center, scale = _check_estimator(estimator)
    r = jnp.asarray(rewards, jnp.float32)
    if not center:
        return r
    g = jnp.asarray(group_ids, jnp.int32)
    seg = lambda x, f=jax.ops.segment_sum: f(x, g, num_segments=num_groups)  # noqa: E731
    counts = seg(jnp.ones_like(r))
    mean = seg(r) / jnp.maximum(counts, 1.0)
    flat = (seg(r, jax.ops.segment_max) - seg(r, jax.ops.segment_min)) <= tiny
    dev = r - mean[g]
    if scale:
        std = jnp.sqrt(seg(dev * dev) / jnp.maximum(counts - ddof, 1.0))
        dev = dev / (std[g] + eps)
    return jnp.where(flat[g], 0.0, dev)
