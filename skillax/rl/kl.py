"""Per-token KL estimators to a frozen reference policy (Schulman 2020, "Approximating KL").

With samples ``x ~ pi`` (the policy's own tokens) and ``log r = log ref(x) - log pi(x)``:

* ``k1 = -log r``                     unbiased value, on-policy gradient 0 in expectation;
* ``k2 = 0.5 * (log r)^2``            biased value; its on-policy gradient
  ``E_pi[(log pi - log ref) grad log pi]`` **equals the exact gradient of KL(pi || ref)**
  (PITFALLS 14) -- the estimator to use as a differentiable loss;
* ``k3 = r - 1 - log r``  ("low-variance KL", GRPO Eq. 4, verl ``low_var_kl``) unbiased
  value, but its gradient ``E_pi[(1 - r) grad log pi]`` is the gradient of KL(ref || pi),
  not of KL(pi || ref).

Numerics: ``log r`` is clamped to ``[-log_ratio_clamp, log_ratio_clamp]`` (default 20) before
``exp``; k3's value is additionally clamped to ``[-10, 10]`` as verl does. Both clamps zero the
gradient outside their range. The KL term is off by default in every method
(``kl_coef = 0``); the Skill1 ``released_code`` objective uses k3 at 0.01.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

ESTIMATORS = ("k1", "k2", "k3")


def kl_penalty(logp: jax.Array, ref_logp: jax.Array, estimator: str = "k2", *,
               log_ratio_clamp: float = 20.0, k3_value_clamp: float = 10.0) -> jax.Array:
    """Per-token KL estimate. logp, ref_logp: (B, T) fp32 -> (B, T) fp32.

    Raises ValueError for an unknown estimator. Multiply by a loss mask before summing.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown KL estimator {estimator!r}; choose one of {ESTIMATORS}")
    log_r = jnp.clip(ref_logp.astype(jnp.float32) - logp.astype(jnp.float32),
                     -log_ratio_clamp, log_ratio_clamp)
    if estimator == "k1":
        return -log_r
    if estimator == "k2":
        return 0.5 * log_r * log_r
    k3 = jnp.exp(log_r) - 1.0 - log_r
    return jnp.clip(k3, -k3_value_clamp, k3_value_clamp)
