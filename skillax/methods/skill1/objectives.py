"""Skill1 objectives: J = J_util + lambda1 J_rerank + lambda2 J_distill (DESIGN.md §1.3).

``objective = "paper"`` (default):
  * util    — GRPO advantage of r(tau) over the G rollouts of a task (ddof=1), on the query
              and every play turn of the episode (PPO-clipped surrogate);
  * rerank  — REINFORCE with the raw NDCG reward per sample (no group normalisation: the
              candidate sets differ across the group), weight lambda1 = 0.3;
  * distil  — GRPO advantage of R_distill = r - max U over the group, normalised apart from
              util, weight lambda2 = 0.3.
``objective = "released_code"`` (Skill1's public code): one scalar per trajectory (sum of step
  rewards minus 0.1 per invalid action), GRPO-normalised over the group and put on every
  sample (query, rank and play turns) under the util objective; distil tokens are not trained;
  K = 3 and a low-variance (k3) KL loss with coefficient 0.01 are set in the config.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from skillax.methods.common.rows import Generation
from skillax.rl.advantages import grpo_advantages
from skillax.rl.objectives import ObjectiveConfig

OBJECTIVES = ("util", "rerank", "distil")


RELEASED_CODE_PRESET = {"rollout.top_k": 3, "rl.kl_coef": 0.01, "rl.kl_estimator": "k3",
                        "play.invalid_penalty": 0.1}


def apply_objective_preset(cfg):
    """``objective="released_code"`` implies the public code's K = 3, k3 KL 0.01 and
    invalid-action penalty 0.1 (DESIGN.md §1.3). Returns an unlocked copy of ``cfg``."""
    cfg = cfg.copy_and_resolve_references()
    if cfg.objective == "released_code":
        with cfg.unlocked():
            for dotted, v in RELEASED_CODE_PRESET.items():
                sec, key = dotted.split(".")
                cfg[sec][key] = v
    return cfg


def objective_configs(cfg) -> dict[str, ObjectiveConfig]:
    """ObjectiveConfig per objective from ``config.rl`` (weights, clip, KL, entropy)."""
    rl = cfg.rl
    common = dict(eps_low=rl.eps_low, eps_high=rl.eps_high, entropy_coef=rl.entropy_coef,
                  aggregation=rl.aggregation)
    if cfg.objective == "released_code":
        return {"util": ObjectiveConfig(weight=1.0, kl_coef=rl.kl_coef, kl_estimator=rl.kl_estimator, **common)}
    if cfg.objective != "paper":
        raise ValueError(f"objective must be 'paper' or 'released_code', got {cfg.objective!r}")
    return {
        "util": ObjectiveConfig(weight=1.0, kl_coef=rl.kl_coef, kl_estimator=rl.kl_estimator, **common),
        # REINFORCE on the whole permutation: -R * sum_t log pi(token_t), averaged over rows.
        "rerank": ObjectiveConfig(weight=rl.lambda_rerank, loss="reinforce", entropy_coef=rl.entropy_coef,
                                  aggregation="seq_mean_token_sum"),
        "distil": ObjectiveConfig(weight=rl.lambda_distil, **common),
    }


def episode_advantages(episodes, objective: str) -> dict[str, np.ndarray]:
    """Per-episode advantage arrays {name: (E,)} (group ids = the task index)."""
    groups = np.array([ep.group for ep in episodes])
    if objective == "released_code":
        ret = np.array([ep.ret_released for ep in episodes], np.float64)
        return {"util": grpo_advantages(ret, groups)}
    r = np.array([ep.r for ep in episodes], np.float64)
    rd = np.array([ep.r_distil for ep in episodes], np.float64)
    return {"util": grpo_advantages(r, groups), "distil": grpo_advantages(rd, groups),
            "rerank": np.array([ep.r_rerank for ep in episodes], np.float64)}


def training_rows(episodes, objective: str) -> tuple[list[Generation], dict[str, np.ndarray]]:
    """Generations to train on and the per-row advantages {objective: (N,)}.

    In the paper variant each generation keeps its own objective; in the released-code variant
    query/rank/play generations are relabelled ``util`` and distil generations dropped.
    """
    adv = episode_advantages(episodes, objective)
    gens: list[Generation] = []
    for ep in episodes:
        for g in ep.generations():
            if objective == "released_code":
                if g.objective == "distil":
                    continue
                g = Generation(g.prompt_ids, g.completion_ids, g.logprobs, "util", g.episode,
                               g.stop_reason, g.text)
            gens.append(g)
    names = ("util",) if objective == "released_code" else OBJECTIVES
    rows = {n: np.zeros(len(gens), np.float32) for n in names}
    for i, g in enumerate(gens):
        rows[g.objective][i] = adv[g.objective][g.episode]
    return gens, rows


def check_episode_indices(episodes: Sequence) -> None:
    for i, ep in enumerate(episodes):
        if ep.index != i:
            raise ValueError(f"episode {i} has index {ep.index}; advantages are indexed by position")
