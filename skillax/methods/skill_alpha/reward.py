"""Skill-alpha's rollback reward (DESIGN.md §1.1; Skill-alpha paper, Sec. 3 "rollback reward").

A training unit (z_{t-1}, x_t, q_anc, V) samples G candidate edits A_1..A_G of the current
skill. The frozen worker answers the anchored query with the unedited skill (control score
r_ctrl = V(a_ctrl)) and with each edited skill z_t^(i) (r_edit_i = V(a_edit_i)). Then

    R_i = 1  if A_i != NOOP and r_edit_i > r_ctrl
    R_i = 1  if A_i == NOOP and no other *valid* candidate j has r_edit_j > r_ctrl
    R_i = 0  otherwise (ties, invalid edits, failed parses)

is :func:`rollback_rewards`, the only place this equation lives.

Ablation (``unit.reward = "own_score"``; the paper's "w/o rollback reward" row, Table 4/5):
R_i = r_edit_i, the edited skill's own verified score, with no comparison to the control
(NOOP: its skill is z_{t-1}, so r_ctrl; invalid: 0) -- :func:`own_score_rewards`.

Beyond the paper (config, both default off):

* k anchored queries: ``r_ctrl`` and ``r_edit_i`` are the *mean* verified score over the same k
  queries (:func:`anchor_mean`), so "r_edit > r_ctrl" reads "the mean score difference is
  positive". With k = 1 this is the paper's rule exactly.
* graded reward: R_i = r_edit_i - r_ctrl for a valid non-NOOP edit (in [-1, 1] for scores in
  [0, 1]); NOOP gets ``-max(0, best improvement of another valid candidate)`` (0 when nothing
  beats the control, i.e. NOOP is right; minus the improvement it passed up otherwise);
  invalid edits / failed parses get -1, the floor of the graded range -- the analogue of the
  binary rule, where invalid edits sit at the binary floor 0 together with ties.

NOOP's skill *is* z_{t-1}: its score is r_ctrl by definition and no worker call is spent on
it; invalid candidates spend none either (see :mod:`skillax.methods.skill_alpha.unit`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

NOOP = "NOOP"
TOL = 1e-9  # score differences within TOL are ties (means over k anchors are float sums)


def anchor_mean(scores: Sequence[float]) -> float:
    """Mean verified score over the k anchored queries of one skill (k >= 1).

    Raises ValueError for an empty list or a non-finite score."""
    s = np.asarray(list(scores), np.float64)
    if s.size == 0:
        raise ValueError("anchor_mean needs at least one anchored-query score")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"non-finite anchored-query score in {s.tolist()}")
    return float(s.mean())


def rollback_rewards(actions: Sequence[str | None], valid: Sequence[bool],
                     r_edit: Sequence[float | None], r_ctrl: float, *,
                     graded: bool = False, tol: float = TOL) -> np.ndarray:
    """Rollback rewards of one group of G candidate edits (module docstring).

    Args:
      actions: (G,) action kind per candidate ("CREATE" | "UPDATE" | "MERGE" | "PRUNE" |
        "NOOP"), or None when the output did not parse.
      valid: (G,) True when the edit parsed *and* applied (``EditResult.valid``).
      r_edit: (G,) verified score of the worker with candidate i's edited skill (mean over
        the k anchored queries); ignored (may be None) for invalid candidates and for NOOP,
        whose skill is the control skill.
      r_ctrl: control score with the unedited skill z_{t-1} (same queries, same verifier).
      graded: the beyond-the-paper graded variant instead of the binary rule.
      tol: differences with |r_edit - r_ctrl| <= tol are ties.

    Returns:
      (G,) float64 rewards: binary in {0, 1}; graded in [-1, 1] for scores in [0, 1].

    Raises:
      ValueError: length mismatch, a valid candidate with an unknown action, a valid
        non-NOOP candidate without a finite r_edit, or a non-finite r_ctrl.
    """
    G = len(actions)
    edit, noop, score = _candidates(actions, valid, r_edit, r_ctrl)
    gain = np.where(edit, score - float(r_ctrl), 0.0)  # r_edit - r_ctrl of valid non-NOOP candidates
    beats = edit & (gain > tol)
    if not graded:
        out = np.zeros(G, np.float64)
        out[beats] = 1.0
        out[noop] = 0.0 if beats.any() else 1.0
        return out
    out = np.full(G, -1.0)
    out[edit] = np.where(np.abs(gain[edit]) <= tol, 0.0, gain[edit])
    out[noop] = -max(0.0, float(gain[beats].max())) if beats.any() else 0.0
    return out


REWARDS = ("rollback", "own_score")


def own_score_rewards(actions: Sequence[str | None], valid: Sequence[bool],
                      r_edit: Sequence[float | None], r_ctrl: float) -> np.ndarray:
    """The "w/o rollback reward" ablation (module docstring): R_i = the verified score of
    candidate i's own skill.

    Args: as :func:`rollback_rewards` (NOOP's score is ``r_ctrl``).
    Returns (G,) float64 rewards in [0, 1] for scores in [0, 1]; 0 for invalid candidates.
    Raises ValueError: length mismatch, a valid candidate with an unknown action, a valid
    non-NOOP candidate without a finite r_edit, or a non-finite r_ctrl.
    """
    edit, noop, score = _candidates(actions, valid, r_edit, r_ctrl)
    return np.where(edit, score, np.where(noop, float(r_ctrl), 0.0))


def _candidates(actions, valid, r_edit, r_ctrl) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check a group's candidates (the Raises of :func:`rollback_rewards`) -> (edit (G,) bool:
    valid non-NOOP, noop (G,) bool: valid NOOP, score (G,) float64: r_edit of edits, else 0)."""
    G = len(actions)
    if len(valid) != G or len(r_edit) != G:
        raise ValueError(f"actions ({G}), valid ({len(valid)}) and r_edit ({len(r_edit)}) must align")
    if not np.isfinite(r_ctrl):
        raise ValueError(f"r_ctrl must be finite, got {r_ctrl}")
    edit, noop, score = np.zeros(G, bool), np.zeros(G, bool), np.zeros(G, np.float64)
    for i, (a, ok, r) in enumerate(zip(actions, valid, r_edit)):
        if not ok:
            continue
        if a == NOOP:
            noop[i] = True
        elif a in ("CREATE", "UPDATE", "MERGE", "PRUNE"):
            if r is None or not np.isfinite(r):
                raise ValueError(f"valid {a} candidate {i} has no finite r_edit ({r!r})")
            edit[i], score[i] = True, float(r)
        else:
            raise ValueError(f"candidate {i} is valid but has unknown action {a!r}")
    return edit, noop, score
