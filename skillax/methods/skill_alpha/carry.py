"""Which candidate's skill carries forward as z_t during training (DESIGN.md §1.1 leaves it open).

The paper samples G candidate edits per unit but only one skill can continue the stream.
``carry`` (config ``unit.carry``) chooses it:

* ``"best"`` (default; DESIGN.md's suggestion): the valid edit with the largest score gain
  r_edit - r_ctrl among those that *beat* the control (ties broken by the lowest candidate
  index, i.e. the first sampled); when no valid edit beats the control -- whether or not a
  NOOP was sampled -- z_t = z_{t-1}. Under the binary reward this is "the best-rewarded valid
  candidate, else z_{t-1}": every edit that beats control has reward 1, and a rewarded NOOP
  means z_{t-1}. The training stream therefore only ever grows by verified improvements.
* ``"first"``: candidate 0's edited skill if it is valid, else z_{t-1} (on-policy: the skill
  evolves exactly as it would at inference, where one edit is sampled per chunk).
* ``"keep"``: always z_{t-1} (ablation: every unit edits the initial skill z_0).

A skipped unit (worker or judge failure) always keeps z_{t-1}.
"""
from __future__ import annotations

from typing import Sequence

CARRY_MODES = ("best", "first", "keep")
TOL = 1e-9


def choose_carry(mode: str, actions: Sequence[str | None], valid: Sequence[bool],
                 r_edit: Sequence[float | None], r_ctrl: float | None) -> int | None:
    """Index of the candidate whose edited skill becomes z_t, or None for z_{t-1}.

    Args:
      mode: one of :data:`CARRY_MODES`.
      actions, valid, r_edit: per-candidate action kind, validity and verified score (as for
        :func:`skillax.methods.skill_alpha.reward.rollback_rewards`).
      r_ctrl: control score; None when the unit was skipped (then the result is None).
    Raises ValueError for an unknown mode.
    """
    if mode not in CARRY_MODES:
        raise ValueError(f"unit.carry must be one of {CARRY_MODES}, got {mode!r}")
    if mode == "keep" or r_ctrl is None:
        return None
    if mode == "first":
        return 0 if valid and valid[0] and actions[0] != "NOOP" else None
    best, best_gain = None, TOL
    for i, (a, ok, r) in enumerate(zip(actions, valid, r_edit)):
        if ok and a != "NOOP" and r is not None and r - r_ctrl > best_gain:
            best, best_gain = i, r - r_ctrl
    return best
