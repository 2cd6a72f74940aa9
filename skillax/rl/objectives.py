"""Weighted objectives over one token batch: ``J = sum_k lambda_k J_k``.

Batch format (one tokens batch, one loss mask per objective; all arrays right-padded,
aligned as in ARCHITECTURE.md)::

    batch = {
      "tokens":       (B, T) int32,
      "positions":    (B, T) int32,
      "valid":        (B, T) bool,      # False on padding
      "old_logprobs": (B, T) float32,   # behaviour logprobs, same temperature/truncation
      "ref_logprobs": (B, T) float32,   # optional; else the train step computes them
      "objectives": {
        name: {"loss_mask":  (B, T) float32/bool,  # 1 on this objective's policy tokens
               "advantages": (B,) or (B, T) float32},
      },
    }

Rows of different generations (e.g. Skill1's query+play rows, rank rows, distil rows) sit in
the same batch; each objective's mask selects its tokens. A token may belong to several
objectives (its loss terms then add), but typically the masks are disjoint.

Each objective k has an :class:`ObjectiveConfig` (weight, loss kind, aggregation, clip,
KL, entropy). Its per-token loss is ``pg + kl_coef * KL - entropy_coef * H`` and is
aggregated into (numerator, denominator) (:mod:`skillax.rl.aggregation`). The train step
computes every denominator over the *whole* batch first, then scans micro-batches summing
gradients of ``sum_k lambda_k num_k / D_k`` -- exactly the one-big-batch update.

Zero-variance groups and KL (PITFALLS 3), our decision: by default ("keep") rows of a group
whose rewards are all equal keep their loss mask: their advantage is exactly 0, so they add
no policy-gradient, but they *do* contribute their KL and entropy gradients and count in the
denominator (as verl and TRL do). ``zero_variance="drop"`` (see
:func:`skillax.rl.masks.drop_zero_variance`) removes them from the mask entirely: no
gradient of any kind and not counted.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from skillax.rl import aggregation, kl, losses

LOSSES = ("ppo", "reinforce")
#: the additive per-objective sums of :func:`objectives_loss` (``{name}/{stat}``)
SUM_STATS = ("num", "pg", "kl", "entropy", "clipped", "dual_clipped", "ratio", "tokens")


@dataclasses.dataclass(frozen=True)
class ObjectiveConfig:
    """One objective's knobs (hashable: passed to jit as a static argument).

    Attributes:
      weight: lambda_k in J = sum_k lambda_k J_k (Skill1: util 1.0, rerank 0.3, distil 0.3).
      loss: "ppo" (clipped surrogate with importance ratio) or "reinforce" (-A log pi).
      aggregation: one of :data:`skillax.rl.aggregation.MODES`.
      max_len: L_max for "seq_mean_token_sum_norm" (Dr.GRPO), else unused.
      eps_low, eps_high: PPO clip range [1 - eps_low, 1 + eps_high] (clip-higher: eps_high > eps_low).
      dual_clip: dual-clip constant c > 1, or None.
      log_ratio_clamp: clamp of log(pi/pi_old) before exp.
      kl_coef: beta of the KL-to-reference term; 0 (default) disables it.
      kl_estimator: "k1" | "k2" | "k3" (:mod:`skillax.rl.kl`).
      entropy_coef: coefficient of the entropy bonus (default 0.001, Skill-alpha).
    """

    weight: float = 1.0
    loss: str = "ppo"
    aggregation: str = "token_mean"
    max_len: int | None = None
    eps_low: float = 0.2
    eps_high: float = 0.2
    dual_clip: float | None = None
    log_ratio_clamp: float = 20.0
    kl_coef: float = 0.0
    kl_estimator: str = "k2"
    entropy_coef: float = 0.001

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        aggregation.check_mode(self.aggregation, self.max_len)
        if self.kl_estimator not in kl.ESTIMATORS:
            raise ValueError(f"kl_estimator must be one of {kl.ESTIMATORS}, got {self.kl_estimator!r}")
        if self.kl_coef < 0 or self.entropy_coef < 0 or self.weight < 0:
            raise ValueError("weight, kl_coef and entropy_coef must be >= 0")
        if not (0.0 <= self.eps_low < 1.0 and self.eps_high >= 0.0):
            raise ValueError(f"need 0 <= eps_low < 1, eps_high >= 0; got {self.eps_low}, {self.eps_high}")
        if self.dual_clip is not None and not self.dual_clip > 1.0:
            raise ValueError(f"dual_clip must be > 1 or None, got {self.dual_clip}")


Objectives = Mapping[str, ObjectiveConfig]


def needs_reference(objectives: Objectives) -> bool:
    """True when some objective has a KL term (reference logprobs are then required)."""
    return any(o.kl_coef > 0 for o in objectives.values())


def has_policy_signal(batch: Mapping, objectives: Objectives) -> bool:
    """True when some objective has a KL term or a non-zero advantage under its loss mask
    (host-side, numpy). False = the batch's only gradient is the entropy bonus (e.g. every
    group zero-variance): ``PolicyEngine.train`` then skips the update (``rl.skip_no_signal``)."""
    if needs_reference(objectives):
        return True
    for name in objectives:
        ob = batch["objectives"][name]
        mask = np.asarray(ob["loss_mask"]) > 0
        adv = np.asarray(ob["advantages"], np.float64)
        if adv.ndim == 1:
            adv = np.broadcast_to(adv[:, None], mask.shape)
        if np.any(adv[mask] != 0.0):
            return True
    return False


def validate_batch(batch: Mapping, objectives: Objectives) -> None:
    """Host-side check of the batch format (numpy or jax arrays). Raises ValueError with the
    offending key: missing keys, shape mismatches, rows that are not right-padded, masks on
    padding or position 0, non-finite advantages / old logprobs under a mask."""
    for k in ("tokens", "positions", "valid", "objectives"):
        if k not in batch:
            raise ValueError(f"batch is missing {k!r}")
    B, T = np.shape(batch["tokens"])
    for k in ("positions", "valid", "old_logprobs", "ref_logprobs"):
        if k in batch and np.shape(batch[k]) != (B, T):
            raise ValueError(f"batch[{k!r}] has shape {np.shape(batch[k])}, want {(B, T)}")
    if set(batch["objectives"]) != set(objectives):
        raise ValueError(f"batch objectives {sorted(batch['objectives'])} != configured {sorted(objectives)}")
    if any(o.loss == "ppo" for o in objectives.values()) and "old_logprobs" not in batch:
        raise ValueError("a 'ppo' objective needs batch['old_logprobs']")
    valid = np.asarray(batch["valid"]).astype(bool)
    # right padding: the fused GPU attention (cuDNN, causal, no mask) is exact only for valid
    # positions of right-padded rows; a left-padded row would attend to its padding silently
    # (~1.5 nats off on the H200, issue 23 item 9), so any other layout is refused everywhere
    first_pad = np.where(valid.all(axis=1), T, np.argmin(valid, axis=1))
    gap = valid & (np.arange(T)[None, :] >= first_pad[:, None])
    if np.any(gap):
        rows = np.flatnonzero(gap.any(axis=1))[:5].tolist()
        raise ValueError(f"batch['valid'] must be right-padded (valid tokens first, then padding); "
                         f"rows {rows} have valid tokens after padding")
    for name, ob in batch["objectives"].items():
        for k in ("loss_mask", "advantages"):
            if k not in ob:
                raise ValueError(f"objective {name!r} is missing {k!r}")
        m = np.asarray(ob["loss_mask"]).astype(bool)
        if m.shape != (B, T):
            raise ValueError(f"objective {name!r}: loss_mask shape {m.shape}, want {(B, T)}")
        if np.any(m & ~valid):
            raise ValueError(f"objective {name!r}: loss_mask is 1 on padding (valid=False)")
        if np.any(m[:, 0]):
            raise ValueError(f"objective {name!r}: loss_mask must be 0 at position 0 (no prediction)")
        a = np.asarray(ob["advantages"], np.float64)
        if a.shape not in ((B,), (B, T)):
            raise ValueError(f"objective {name!r}: advantages shape {a.shape}, want {(B,)} or {(B, T)}")
        a = np.broadcast_to(a[:, None] if a.ndim == 1 else a, (B, T))
        if not np.all(np.isfinite(a[m])):
            raise ValueError(f"objective {name!r}: non-finite advantages under the loss mask")
        if objectives[name].loss == "ppo" and not np.all(np.isfinite(np.asarray(batch["old_logprobs"])[m])):
            raise ValueError(f"objective {name!r}: non-finite old_logprobs under the loss mask")


def denominators(batch: Mapping, objectives: Objectives) -> dict[str, jax.Array]:
    """{name: () fp32} aggregation denominators over the whole batch (masks only)."""
    return {n: aggregation.denominator(batch["objectives"][n]["loss_mask"], o.aggregation, o.max_len)
            for n, o in objectives.items()}


def objectives_loss(
    logp: jax.Array,
    entropy: jax.Array,
    batch: Mapping,
    objectives: Objectives,
    dens: Mapping[str, jax.Array],
    ref_logp: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Weighted loss of a (micro-)batch and additive metric sums.

    Args:
      logp, entropy: (b, T) fp32 from :func:`skillax.rl.logprobs.token_logprobs`.
      batch: the (micro-)batch dict (module docstring).
      objectives: {name: ObjectiveConfig}.
      dens: {name: () fp32} denominators of the WHOLE batch (:func:`denominators`).
      ref_logp: (b, T) reference logprobs when some objective has kl_coef > 0.
    Returns:
      loss () fp32 = sum_k weight_k * num_k / D_k (0 for an objective with D_k = 0), and sums
      {f"{name}/{stat}": ()} for stat in num, pg, kl, entropy, clipped, dual_clipped, ratio,
      tokens -- all additive over micro-batches; see :func:`finalize_metrics`.
    """
    total = jnp.zeros((), jnp.float32)
    sums: dict[str, jax.Array] = {}
    for name, cfg in objectives.items():
        ob = batch["objectives"][name]
        mask = ob["loss_mask"].astype(bool)
        # Sanitise masked-out positions *before* the math: a NaN/inf there (padding, garbage
        # old logprobs) would otherwise turn into NaN gradients through where's 0 * NaN.
        clean = lambda x: jnp.where(mask, x, 0.0)  # noqa: E731
        lp = clean(logp)
        adv = clean(losses.broadcast_advantages(ob["advantages"], logp.shape))
        if cfg.loss == "ppo":
            pg, st = losses.ppo_clip_loss(lp, clean(batch["old_logprobs"]), adv,
                                          eps_low=cfg.eps_low, eps_high=cfg.eps_high,
                                          dual_clip=cfg.dual_clip, log_ratio_clamp=cfg.log_ratio_clamp)
        else:
            pg = losses.reinforce_loss(lp, adv)
            st = {"ratio": jnp.ones_like(pg), "clipped": jnp.zeros_like(pg), "dual_clipped": jnp.zeros_like(pg)}
        per_tok = pg
        kl_tok = jnp.zeros_like(pg)
        if cfg.kl_coef > 0:
            if ref_logp is None:
                raise ValueError(f"objective {name!r} has kl_coef > 0 but no reference logprobs were given")
            kl_tok = kl.kl_penalty(lp, clean(ref_logp), cfg.kl_estimator, log_ratio_clamp=cfg.log_ratio_clamp)
            per_tok = per_tok + cfg.kl_coef * kl_tok
        if cfg.entropy_coef > 0:
            per_tok = per_tok + losses.entropy_bonus(clean(entropy), cfg.entropy_coef)
        num = aggregation.numerator(per_tok, mask, cfg.aggregation)
        total = total + cfg.weight * aggregation.safe_ratio(num, dens[name])
        msum = lambda x: jnp.sum(jnp.where(mask, x, 0.0))  # noqa: E731
        sums.update({f"{name}/num": num, f"{name}/pg": msum(pg), f"{name}/kl": msum(kl_tok),
                     f"{name}/entropy": msum(clean(entropy)), f"{name}/clipped": msum(st["clipped"]),
                     f"{name}/dual_clipped": msum(st["dual_clipped"]), f"{name}/ratio": msum(st["ratio"]),
                     f"{name}/tokens": jnp.sum(mask).astype(jnp.float32)})
    return total, sums


def finalize_metrics(sums: Mapping[str, jax.Array], dens: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
    """Turn accumulated sums into per-objective metrics (token means; 0 for no tokens).

    ``{name}/loss`` (num / D), ``pg_loss``, ``kl``, ``entropy``, ``clip_frac``,
    ``dual_clip_frac``, ``ratio_mean`` (all per-token means over the objective's mask) and
    ``tokens``. An objective with no tokens reports zeros and ``tokens = 0``, never NaN.
    """
    out = {}
    for name, den in dens.items():
        t = sums[f"{name}/tokens"]
        out[f"{name}/loss"] = aggregation.safe_ratio(sums[f"{name}/num"], den)
        for src, dst in (("pg", "pg_loss"), ("kl", "kl"), ("entropy", "entropy"), ("clipped", "clip_frac"),
                         ("dual_clipped", "dual_clip_frac"), ("ratio", "ratio_mean")):
            out[f"{name}/{dst}"] = aggregation.safe_ratio(sums[f"{name}/{src}"], t)
        out[f"{name}/tokens"] = t
    return out
