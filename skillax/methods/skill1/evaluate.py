"""Skill1 evaluation: success rate and mean steps on a split with the library frozen,
with and without retrieval (the paper's no-library ablation), and library statistics."""

from __future__ import annotations

import numpy as np

from skillax.methods.skill1.rollout import rollout


def evaluate(tasks, policy, library, index, pool, play_cfg, rollout_cfg) -> dict:
    """One episode per task at the eval temperature; the library is read, never updated."""
    eps = rollout(tasks, 1, policy, library, index, pool, play_cfg, rollout_cfg)
    won = [ep.r for ep in eps]
    return {"success_rate": float(np.mean(won)), "mean_steps": float(np.mean([ep.trajectory.n_steps for ep in eps])),
            "n_tasks": len(eps), "retrieved_mean": float(np.mean([len(ep.retrieved_ids) for ep in eps])),
            "invalid_action_rate": float(sum(ep.trajectory.n_invalid for ep in eps)
                                         / max(sum(ep.trajectory.n_steps for ep in eps), 1))}


def library_stats(library, bins: int = 10) -> dict:
    """Size and utility histogram over [0, 1]."""
    u = np.array([r.utility for r in library.records()], np.float64)
    hist, edges = np.histogram(u, bins=bins, range=(0.0, 1.0))
    return {"size": int(u.size), "mean_utility": float(u.mean()) if u.size else 0.0,
            "utility_hist": hist.tolist(), "utility_bin_edges": [round(e, 3) for e in edges.tolist()]}
