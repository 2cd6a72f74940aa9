"""Host-side loss-mask edits: overlong filtering, zero-variance groups, policy-token counts.

Masks are never derived from token values here (PITFALLS 10): they come from the sampler's
completion mask / stop reasons and the agent loop's per-segment roles.

* Truncation is a status (PITFALLS 11): a completion whose ``stop_reason == "length"`` is
  truncated. With overlong filtering (DAPO, Yu et al. 2025, Sec. 3.4) its loss mask becomes
  all zero -- but its reward still enters the group statistics, because advantages are
  computed from all rewards before the mask is applied.
* Observation / tool tokens are context (PITFALLS 12): they carry loss mask 0; length limits
  and penalties count policy tokens (mask sum), never characters or context tokens.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from skillax.rl import advantages as adv_lib


def overlong_filter(loss_mask, stop_reasons: Sequence[str]) -> np.ndarray:
    """Zero the loss mask of rows whose stop reason is "length" (truncated completions).

    Args: loss_mask (N, T); stop_reasons: N strings in {"eos", "stop", "length"}.
    Returns: (N, T) float32 copy. Raises ValueError on a length mismatch or unknown reason.
    """
    m = np.array(loss_mask, dtype=np.float32)
    if len(stop_reasons) != m.shape[0]:
        raise ValueError(f"{len(stop_reasons)} stop reasons for {m.shape[0]} rows")
    bad = sorted({s for s in stop_reasons if s not in ("eos", "stop", "length")})
    if bad:
        raise ValueError(f"unknown stop reasons {bad}; want 'eos', 'stop' or 'length'")
    m[np.asarray([s == "length" for s in stop_reasons], bool)] = 0.0
    return m


def drop_zero_variance(loss_mask, rewards, group_ids, *, tiny: float = adv_lib.DEFAULT_TINY) -> np.ndarray:
    """``zero_variance="drop"``: zero the loss mask of rows in all-equal-reward groups.

    Their tokens then give no KL/entropy gradient and do not count in any denominator
    (PITFALLS 3). Returns a float32 copy of loss_mask (N, T).
    """
    m = np.array(loss_mask, dtype=np.float32)
    flat = adv_lib.zero_variance_groups(rewards, group_ids, tiny=tiny)
    if flat.shape[0] != m.shape[0]:
        raise ValueError(f"{flat.shape[0]} rewards for {m.shape[0]} mask rows")
    m[flat] = 0.0
    return m


def policy_token_counts(loss_mask) -> np.ndarray:
    """(N,) int: policy tokens per row (= mask sum). Length limits/penalties use this."""
    return np.asarray(loss_mask).astype(bool).sum(axis=-1)


def soft_overlong_penalty(num_policy_tokens, max_tokens: int, buffer: int) -> np.ndarray:
    """DAPO soft overlong punishment (Yu et al. 2025, Eq. 13), in policy tokens.

    0 for ``L <= max_tokens - buffer``; ``((max_tokens - buffer) - L) / buffer`` (linear down to
    -1) inside the buffer; -1 beyond ``max_tokens``. Args: (N,) token counts. Returns (N,) f32.
    """
    if buffer <= 0 or buffer > max_tokens:
        raise ValueError(f"need 0 < buffer <= max_tokens, got buffer={buffer}, max_tokens={max_tokens}")
    n = np.asarray(num_policy_tokens, np.float64)
    start = max_tokens - buffer
    pen = np.where(n <= start, 0.0, (start - n) / buffer)
    return np.maximum(pen, -1.0).astype(np.float32)
