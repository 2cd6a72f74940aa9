"""Skill1 objectives: J = J_util + lambda1 J_rerank + lambda2 J_distill (DESIGN.md §1.3).

``objective = "paper"`` (default; Skill1 paper §3):
  * util    — GRPO advantage of r(tau) over the G rollouts of a task (ddof=1), on the query
              and every play turn of the episode (PPO-clipped surrogate);
  * rerank  — REINFORCE with the raw NDCG reward per sample (no group normalisation: the
              candidate sets differ across the group), weight lambda1 = ``rl.lambda_rerank``;
              ``rl.rerank_baseline = "batch_mean"`` (ours, off by default) subtracts the mean
              NDCG of the step's reranked episodes (:func:`rerank_advantages`);
  * distil  — GRPO advantage of R_distill = r - max U over the group, normalised apart from
              util, weight lambda2 = ``rl.lambda_distil``.
  lambda = 0 (the paper's lambda1 = 0 / lambda2 = 0 ablation rows) drops that objective: its
  generations still happen (the policy still reranks / distils, skills are still admitted)
  but carry no loss.

``objective = "released_code"`` (Skill1's public code, AlphaLab-USTC/Skill1, built on
verl-agent). Each point and its source:
  1. task reward 10 * won: verl-agent ``agent_system/environments/env_package/alfworld/
     envs.py`` (``compute_reward``: ``10.0 * won``), the env the released ALFWorld script
     trains on (``env.env_name=alfworld/AlfredTWEnv`` in ``launch_scripts/alfworld/
     train_alfworld.sh``);
  2. lambda1 * NDCG inside the same scalar (``env.skill_library.lambda_rerank=0.3``,
     ``enable_rerank=True`` in that script; that the term is added to the trajectory scalar
     rather than trained as its own objective is DESIGN.md §1.3's reading of the released code
     -- the Python is not in our offline index, so this point is not re-checked here);
  3. invalid-action penalty 0.1 per invalid step sample
     (``actor_rollout_ref.actor.use_invalid_action_penalty=True``,
     ``invalid_action_penalty_coef=0.1``; verl-agent ``ray_trainer.apply_invalid_action_penalty``
     subtracts it from that step sample's score);
  4. GRPO over step samples: every turn is its own sample scored with the episode's reward
     (verl-agent ``EpisodeRewardManager``), and ``core_algos.compute_grpo_outcome_advantage``
     with ``compute_mean_std_cross_all_data=True`` takes the group mean and (Bessel) std over
     *all step samples* of the task's G trajectories (a long trajectory weighs more);
  5. distil tokens are not trained (DESIGN.md §1.3); K = 3 (``env.skill_library.top_k=3``);
     KL loss 0.01 low-variance (``kl_loss_coef=0.01``, ``kl_loss_type=low_var_kl``) -- set by
     :data:`RELEASED_CODE_PRESET` where the config leaves Skill1's default
     (:func:`apply_objective_preset`).
  Our reading where the code is silent: the query and rerank generations are step samples
  of their trajectory too (no penalty); a group whose samples all score the same gets
  advantage 0, and so does a group of one sample (verl keeps its raw score; here it happens
  only when the other rollouts of the task have no step sample, e.g. their resets failed).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from skillax.methods.common.rows import Generation
from skillax.config_preset import RELEASED_CODE_PRESET, apply_objective_preset  # noqa: F401 (re-exported)
from skillax.methods.skill1 import rewards
from skillax.rl.advantages import grpo_advantages
from skillax.rl.objectives import ObjectiveConfig

OBJECTIVES = ("util", "rerank", "distil")
RERANK_BASELINES = ("none", "batch_mean")
UTIL_WEIGHTINGS = ("token", "trajectory")

RELEASED_SUCCESS_REWARD = 10.0


def objective_configs(cfg) -> dict[str, ObjectiveConfig]:
    """ObjectiveConfig per trained objective from ``config.rl`` (weights, clip, KL, entropy);
    an objective whose lambda is 0 is left out (module docstring)."""
    rl = cfg.rl
    util_weighting(cfg)   # refused before any work (the run calls this at start-up)
    common = dict(eps_low=rl.eps_low, eps_high=rl.eps_high, entropy_coef=rl.entropy_coef,
                  aggregation=rl.aggregation)
    if cfg.objective == "released_code":
        return {"util": ObjectiveConfig(weight=1.0, kl_coef=rl.kl_coef, kl_estimator=rl.kl_estimator, **common)}
    if cfg.objective != "paper":
        raise ValueError(f"objective must be 'paper' or 'released_code', got {cfg.objective!r}")
    kl_on = kl_objectives(rl)

    def kl(name: str) -> dict:
        return dict(kl_coef=rl.kl_coef, kl_estimator=rl.kl_estimator) if name in kl_on else {}

    out = {"util": ObjectiveConfig(weight=1.0, **kl("util"), **common)}
    rerank_baseline(rl)
    if float(rl.lambda_rerank) > 0:
        # REINFORCE on the whole permutation: -R * sum_t log pi(token_t), averaged over rows.
        out["rerank"] = ObjectiveConfig(weight=rl.lambda_rerank, loss="reinforce", entropy_coef=rl.entropy_coef,
                                        aggregation="seq_mean_token_sum", **kl("rerank"))
    if float(rl.lambda_distil) > 0:
        out["distil"] = ObjectiveConfig(weight=rl.lambda_distil, **kl("distil"), **common)
    return out


def kl_objectives(rl) -> frozenset[str]:
    """The objectives whose loss carries ``rl.kl_coef`` (``rl.kl_objectives``, a comma list;
    default "util": the play objective only, as before the option existed). Raises ValueError
    for a name not in :data:`OBJECTIVES` or an empty list."""
    names = frozenset(x.strip() for x in str(rl.get("kl_objectives", "util")).split(",") if x.strip())
    if not names:
        raise ValueError("rl.kl_objectives is empty: name at least one objective (default 'util'); "
                         "rl.kl_coef=0 turns the KL off")
    bad = sorted(names - set(OBJECTIVES))
    if bad:
        raise ValueError(f"rl.kl_objectives names unknown objective(s) {bad}; choose from {OBJECTIVES}")
    return names


def util_weighting(cfg) -> str:
    """``rl.util_weighting`` ("token" when absent), checked: one of :data:`UTIL_WEIGHTINGS`;
    "trajectory" only with ``objective="paper"`` and ``rl.aggregation="token_mean"`` (the
    identity :func:`trajectory_token_weights` relies on). Raises ValueError otherwise."""
    w = str(cfg.rl.get("util_weighting", "token"))
    if w not in UTIL_WEIGHTINGS:
        raise ValueError(f"rl.util_weighting must be one of {UTIL_WEIGHTINGS}, got {w!r}")
    if w == "trajectory" and (cfg.objective != "paper" or cfg.rl.aggregation != "token_mean"):
        raise ValueError("rl.util_weighting='trajectory' re-weights the paper objective's token mean: it needs "
                         f"objective='paper' and rl.aggregation='token_mean' (got {cfg.objective!r}, "
                         f"{cfg.rl.aggregation!r})")
    return w


def trajectory_token_weights(gens: Sequence[Generation], objective: str = "util") -> np.ndarray:
    """Per-row advantage scale (N,) float32 that makes a token-mean loss weigh every episode
    once: row r of episode e gets ``N_tok / (E * n_e)``, where n_e is the completion tokens of
    e's ``objective`` rows, N_tok their sum over episodes and E the episodes with any; rows of
    another objective get 1.

    With the PPO surrogate's advantage scaled so, sum_tokens(A' l) / N_tok =
    (1 / E) sum_e (1 / n_e) sum_{t in e} A_e l_t: GRPO's per-sequence mean (DeepSeekMath, Shao et
    al. 2024, Eq. 3, ``1/G sum_i 1/|o_i| sum_t``) with the whole multi-turn episode as the
    sequence. Without it a token mean over turns weighs an episode by its length, and lost
    episodes run longest (campaign 17: the paper objective's surrogate averaged +0.159 a step).
    Clipping is unchanged (a positive scale keeps min(rA, clip(r)A)'s branch); the KL term keeps
    its token mean. Exact for one mini-batch (``rl.mini_batches=1``); with more, each
    mini-batch's own token count replaces N_tok. Example: episode 0 with turns of 3 and 1 tokens,
    episode 1 with one turn of 12: N_tok 16, E 2 -> [2, 2, 2/3]."""
    tok: dict[int, int] = {}
    for g in gens:
        if g.objective == objective:
            tok[g.episode] = tok.get(g.episode, 0) + len(g.completion_ids)
    tok = {e: n for e, n in tok.items() if n > 0}
    w = np.ones(len(gens), np.float32)
    if not tok:
        return w
    total, n_eps = float(sum(tok.values())), float(len(tok))
    for i, g in enumerate(gens):
        if g.objective == objective and g.episode in tok:
            w[i] = total / (n_eps * tok[g.episode])
    return w


def rerank_baseline(rl) -> str:
    """``rl.rerank_baseline`` ("none" when absent), checked against :data:`RERANK_BASELINES`;
    raises ValueError for another value."""
    b = str(rl.get("rerank_baseline", "none"))
    if b not in RERANK_BASELINES:
        raise ValueError(f"rl.rerank_baseline must be one of {RERANK_BASELINES}, got {b!r}")
    return b


def rerank_advantages(episodes, baseline: str = "none") -> np.ndarray:
    """Per-episode rerank advantage (E,) float64.

    "none" (the paper, Skill1 §3: REINFORCE on R_rerank = NDCG per sample): the raw NDCG.
    "batch_mean" (ours): NDCG minus the mean NDCG over the step's episodes that reranked
    (``rank_gen`` set; a parse failure counts with its 0), the usual REINFORCE baseline. With
    NDCG ~0.93 on every sample, the raw reward pushes up whatever order is sampled: in campaign
    14 the rerank entropy fell 0.136 -> 0.005 in 8 steps without NDCG rising, and the rerank
    term set the update's gradient norm (median 2.81 against 0.12 without it;
    ``benchmarks/results/learning/campaign_2026-12-04``). Episodes without a rerank keep 0.
    Example: NDCG 0.9, 0.95, 1.0 and one episode without a rerank -> none [0.9, 0.95, 1.0, 0],
    batch_mean [-0.05, 0, +0.05, 0]. Raises ValueError for another ``baseline``.
    """
    if baseline not in RERANK_BASELINES:
        raise ValueError(f"rerank baseline must be one of {RERANK_BASELINES}, got {baseline!r}")
    r = np.array([ep.r_rerank for ep in episodes], np.float64)
    ranked = np.array([ep.rank_gen is not None for ep in episodes], bool)
    if baseline == "batch_mean" and ranked.any():
        r = np.where(ranked, r - r[ranked].mean(), 0.0)
    return r


def episode_advantages(episodes, rerank_baseline: str = "none") -> dict[str, np.ndarray]:
    """Paper objective: per-episode advantage arrays {name: (E,)} (group ids = the task index);
    the rerank one from :func:`rerank_advantages`."""
    groups = np.array([ep.group for ep in episodes])
    r = np.array([ep.r for ep in episodes], np.float64)
    rd = np.array([ep.r_distil for ep in episodes], np.float64)
    return {"util": grpo_advantages(r, groups), "distil": grpo_advantages(rd, groups),
            "rerank": rerank_advantages(episodes, rerank_baseline)}


def released_code_samples(episodes, lambda_rerank: float, invalid_penalty: float
                          ) -> tuple[list[Generation], np.ndarray]:
    """``objective="released_code"``: the step samples (query, rank, play turns; no distil)
    relabelled ``util`` and their GRPO advantages over all step samples of each group
    (module docstring, points 1-4). Returns (generations, (N,) advantages)."""
    gens, scores, groups = [], [], []
    for ep in episodes:
        invalid = {id(g): not st.valid for g, st in zip(ep.play_gens, ep.trajectory.steps)}
        for g in ep.generations():
            if g.objective == "distil":
                continue
            gens.append(Generation(g.prompt_ids, g.completion_ids, g.logprobs, "util", g.episode,
                                   g.stop_reason, g.text))
            scores.append(rewards.released_code_score(
                ep.r >= 1.0, ep.r_rerank, invalid.get(id(g), False), success_reward=RELEASED_SUCCESS_REWARD,
                lambda_rerank=float(lambda_rerank), invalid_penalty=float(invalid_penalty)))
            groups.append(ep.group)
    if not gens:
        return [], np.zeros(0, np.float64)
    _, inv = np.unique(np.array(groups), return_inverse=True)      # dense group ids
    return gens, grpo_advantages(np.array(scores, np.float64), inv)


def training_rows(episodes, objective: str, trained: Sequence[str] = OBJECTIVES, *,
                  lambda_rerank: float = 0.3, invalid_penalty: float = 0.1, rerank_baseline: str = "none",
                  util_weighting: str = "token") -> tuple[list[Generation], dict[str, np.ndarray]]:
    """Generations to train on and the per-row advantages {objective: (N,)}.

    ``trained``: the objectives with a loss (``objective_configs``' keys); generations of
    another objective are dropped. Paper: each generation keeps its own objective and its
    episode's advantage (``rerank_baseline``: :func:`rerank_advantages`; ``util_weighting=
    "trajectory"`` scales the util rows by :func:`trajectory_token_weights`). Released code:
    :func:`released_code_samples`. Raises ValueError for an unknown objective or weighting.
    """
    if util_weighting not in UTIL_WEIGHTINGS:
        raise ValueError(f"util_weighting must be one of {UTIL_WEIGHTINGS}, got {util_weighting!r}")
    if objective == "released_code":
        gens, adv = released_code_samples(episodes, lambda_rerank, invalid_penalty)
        return gens, {"util": adv.astype(np.float32)}
    if objective != "paper":
        raise ValueError(f"objective must be 'paper' or 'released_code', got {objective!r}")
    adv = episode_advantages(episodes, rerank_baseline)
    gens = [g for ep in episodes for g in ep.generations() if g.objective in trained]
    rows = {n: np.zeros(len(gens), np.float32) for n in trained}
    for i, g in enumerate(gens):
        rows[g.objective][i] = adv[g.objective][g.episode]
    if util_weighting == "trajectory" and "util" in rows:
        rows["util"] = (rows["util"] * trajectory_token_weights(gens, "util")).astype(np.float32)
    return gens, rows


def check_episode_indices(episodes: Sequence) -> None:
    for i, ep in enumerate(episodes):
        if ep.index != i:
            raise ValueError(f"episode {i} has index {ep.index}; advantages are indexed by position")
