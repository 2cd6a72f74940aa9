"""Skill1 rewards, objectives and library updates on hand-built episodes (no model): the distil
reward on a parse failure (issue 19 item 1), n(s) counting selections (item 2), the
released-code preset's step-sample GRPO (item 4), lambda = 0 and w/o Distillation / Library."""

import numpy as np
import pytest
from ml_collections import ConfigDict

from skillax.agents.agent_loop import Step, Trajectory
from skillax.agents.envs.base import Task
from skillax.config_defaults import skill1
from skillax.methods.common.rows import Generation
from skillax.methods.skill1 import objectives as obj_lib
from skillax.methods.skill1 import rewards
from skillax.methods.skill1.rollout import Episode, score_episodes, update_library
from skillax.skills.library import SkillLibrary
from skillax.skills.parsers import RankParse, parse_distil

GOOD = parse_distil('```json\n{"subtasks": [], "task_success": true, "action_lesson": "take the apple from the '
                    'countertop", "navigation_lesson": "the apple was on a countertop", "description_head": '
                    '"Use for cooling"}\n```')
BAD = parse_distil("garbage")


def gen(objective, episode):
    return Generation([1, 2], [3], [-0.5], objective, episode)


def episode(i, group, won, distil=None, valid=(True,), retrieved=(), utilities=(), rank=None, chosen=None):
    tr = Trajectory(f"t{group}", "put a cool apple in diningtable", won=won)
    tr.steps = [Step("obs", [], "r", "a", v) for v in valid]
    ep = Episode(index=i, group=group, task=Task(f"t{group}", "toy", "fam", "put a cool apple in diningtable"),
                 trajectory=tr, distil=distil, retrieved_ids=list(retrieved), retrieved_utilities=list(utilities),
                 rank=rank, chosen_id=chosen)
    ep.query_gen = gen("util", i)
    ep.play_gens = [gen("util", i) for _ in valid]
    ep.distil_gen = gen("distil", i) if distil is not None else None
    return ep


def test_distil_reward_parse_failure_zero_by_default_raw_as_switch():
    assert rewards.distil_reward(1.0, [0.5, 0.7]) == pytest.approx(0.3)
    assert rewards.distil_reward(1.0, [0.5, 0.7], parsed_ok=False) == 0.0
    assert rewards.distil_reward(1.0, [0.5, 0.7], parsed_ok=False, on_parse_fail="raw") == pytest.approx(0.3)
    assert rewards.distil_reward(1.0, [], parsed_ok=True) == 1.0
    with pytest.raises(ValueError, match="on_parse_fail"):
        rewards.distil_reward(1.0, [], on_parse_fail="maybe")
    # the case: a won episode with garbage distil text vs a lost one in its group
    for mode, want in (("zero", [0.0, 0.0]), ("raw", [0.70710578, -0.70710578])):
        eps = [episode(0, 0, True, BAD), episode(1, 0, False, GOOD)]
        score_episodes(eps, mode)
        assert obj_lib.episode_advantages(eps)["distil"] == pytest.approx(want, abs=1e-6)


def test_distil_parse_failure_floor_never_outranks_a_parsed_distil():
    """Campaign 14's case: the retrieved skills' U (0.6) is above the success rate, so every
    parsed distil of a lost episode scores r - max U = -0.6. Rewards [-0.6, -0.6, fail]:
    "zero" -> fail = 0, mean -0.4, unbiased sd sqrt(0.12) = 0.34641, so the failure gets the
    group's top advantage +0.4 / 0.34641 = +1.1547; "floor" -> fail = -1, mean -0.7333,
    sd sqrt(0.05333) = 0.23094: the failure gets -0.26667 / 0.23094 = -1.1547."""
    assert rewards.distil_reward(1.0, [0.5, 0.7], parsed_ok=False, on_parse_fail="floor") == -1.0
    assert rewards.distil_reward(0.0, [0.5, 0.7], parsed_ok=True, on_parse_fail="floor") == pytest.approx(-0.7)
    for mode, want in (("zero", [-0.57735, -0.57735, 1.1547]), ("floor", [0.57735, 0.57735, -1.1547])):
        eps = [episode(i, 0, False, d, retrieved=(7,), utilities=(0.6,)) for i, d in enumerate((GOOD, GOOD, BAD))]
        score_episodes(eps, mode)
        assert [ep.r_distil for ep in eps] == pytest.approx([-0.6, -0.6, 0.0 if mode == "zero" else -1.0])
        assert obj_lib.episode_advantages(eps)["distil"] == pytest.approx(want, abs=1e-4)


def test_count_mode_selected_counts_the_top1_only_and_ema_updates_all_k():
    lib = SkillLibrary(":memory:")
    ids = [lib.add(f"scenario {k}", f"head {k}", f"strategy {k}", step=0).id for k in range(3)]
    ep = episode(0, 0, True, retrieved=ids, utilities=[0.5] * 3, chosen=ids[1])
    ep.r = 1.0
    update_library([ep], lib, step=1, count_mode="selected")
    recs = {r.id: r for r in lib.records()}
    assert [recs[i].count for i in ids] == [1, 2, 1]                 # birth 1, + 1 for the selected
    assert [recs[i].utility for i in ids] == pytest.approx([0.525] * 3)
    update_library([ep], lib, step=2, count_mode="retrieved")
    recs = {r.id: r for r in lib.records()}
    assert [recs[i].count for i in ids] == [2, 3, 2]
    with pytest.raises(ValueError, match="count_mode"):
        update_library([ep], lib, step=3, count_mode="both")
    with pytest.raises(ValueError, match="not among the updated"):
        lib.update_utilities(ids[:1], 1.0, counted=[ids[2]])
    # eviction reads the counts: U * log2(n + 1) -> the unselected, then oldest, goes first
    assert lib.eviction_order()[0] == ids[0]


def test_no_distillation_admits_the_raw_actions_of_won_episodes_only():
    lib = SkillLibrary(":memory:")
    won, lost = episode(0, 0, True), episode(1, 0, False)
    for ep in (won, lost):
        ep.r = float(ep.trajectory.won)
        ep.raw_skill = "Actions: go to countertop 1; take apple 1 from countertop 1"
    counts = update_library([won, lost], lib, step=0)
    assert counts == {"admitted": 1, "merged": 0, "rejected": 1, "evicted": 0, "budget_evicted": 0, "budget_rejected": 0}
    (rec,) = lib.records()
    assert rec.strategy == won.raw_skill and rec.attempt_type == "raw" and rec.description_head == won.task.goal
    # w/o Library: nothing retrieved, nothing distilled -> the library is not touched
    quiet = episode(2, 1, True)
    quiet.r = 1.0
    assert update_library([quiet], lib, step=1) == {"admitted": 0, "merged": 0, "rejected": 0, "evicted": 0,
                                                   "budget_evicted": 0, "budget_rejected": 0}
    assert len(lib) == 1


def test_released_code_scores_and_grpo_over_step_samples():
    """Group of 2 trajectories: A won, NDCG 0.5, query + rank + 2 play turns (one invalid) +
    distil; B lost, query + 1 play turn. Scores 10 + 0.3 * 0.5 = 10.15 (10.05 for the invalid
    turn) and 0; mean 6.75 and Bessel std 5.22867 over the 6 step samples; distil dropped."""
    assert rewards.released_code_score(True, 0.9, False) == pytest.approx(10.27)
    assert rewards.released_code_score(False, 0.0, True) == pytest.approx(-0.1)
    a = episode(0, 0, True, GOOD, valid=(True, False), rank=RankParse((1, 0), True))
    a.rank_gen = gen("rerank", 0)
    b = episode(1, 0, False, valid=(True,))
    score_episodes([a, b])
    a.r_rerank = 0.5
    gens, adv = obj_lib.training_rows([a, b], "released_code", ("util",), lambda_rerank=0.3, invalid_penalty=0.1)
    assert [g.objective for g in gens] == ["util"] * 6
    assert adv["util"] == pytest.approx([0.65026072, 0.65026072, 0.65026072, 0.63113541, -1.29095879, -1.29095879],
                                        abs=1e-6)


def test_lambda_zero_drops_the_objective_but_not_the_generations():
    c = skill1()
    assert set(obj_lib.objective_configs(c)) == {"util", "rerank", "distil"}
    c.rl.lambda_rerank = 0.0
    assert set(obj_lib.objective_configs(c)) == {"util", "distil"}
    c.rl.lambda_distil = 0.0
    trained = tuple(obj_lib.objective_configs(c))
    assert trained == ("util",)
    a = episode(0, 0, True, GOOD, rank=RankParse((0, 1), True))
    a.rank_gen = gen("rerank", 0)
    b = episode(1, 0, False, GOOD)
    score_episodes([a, b])
    gens, rows = obj_lib.training_rows([a, b], "paper", trained)
    assert [g.objective for g in gens] == ["util"] * 4 and set(rows) == {"util"}
    assert rows["util"] == pytest.approx([0.70710578, 0.70710578, -0.70710578, -0.70710578], abs=1e-6)
    gens, rows = obj_lib.training_rows([a, b], "paper")               # all three objectives
    assert [g.objective for g in gens] == ["util", "rerank", "util", "distil", "util", "util", "distil"]
    with pytest.raises(ValueError, match="objective must be"):
        obj_lib.training_rows([a, b], "other")


def test_released_code_preset_and_ablation_names():
    from skillax.methods.skill1.loop import ablation, eval_conditions, rollout_config

    c = skill1()
    c.objective = "released_code"
    p = obj_lib.apply_objective_preset(c)
    assert (p.rollout.top_k, p.rl.kl_coef, p.rl.kl_estimator, p.play.invalid_penalty) == (3, 0.01, "k3", 0.1)
    assert set(obj_lib.objective_configs(p)) == {"util"}
    # a value set away from Skill1's default wins and is logged (session 28: the preset overwrote
    # campaign 17's rl.kl_coef=0.05 with 0.01 silently); the others still take the preset
    from skillax.config_preset import preset_lines

    c.rl.kl_coef, c.play.invalid_penalty = 0.05, 0.0
    p = obj_lib.apply_objective_preset(c)
    assert (p.rollout.top_k, p.rl.kl_coef, p.rl.kl_estimator, p.play.invalid_penalty) == (3, 0.05, "k3", 0.0)
    lines = preset_lines(c)
    assert "objective released_code: rl.kl_coef = 0.05 kept (set explicitly; the preset's value is 0.01)" in lines
    assert "objective released_code: rollout.top_k = 3 (preset)" in lines and len(lines) == 4
    c.objective = "paper"
    assert preset_lines(c) == [] and obj_lib.apply_objective_preset(c).rl.kl_coef == 0.05
    c = skill1()
    r = rollout_config(c)
    assert (r.use_retrieval, r.selection, r.distil, r.distil_parse_fail) == (True, True, "policy", "zero")
    for ab, want in (("no_selection", (True, False, "policy")), ("no_distillation", (True, True, "raw")),
                     ("no_library", (False, True, "off"))):
        c.ablation = ab
        r = rollout_config(c)
        assert (r.use_retrieval, r.selection, r.distil) == want
    assert eval_conditions(c, never_had_library=True) == ("without_library",)
    assert eval_conditions(c, never_had_library=False) == ("with_library", "without_library")
    c.eval.ablate_retrieval = False
    assert eval_conditions(c, never_had_library=False) == ("with_library",)
    with pytest.raises(ValueError, match="ablation must be"):
        ablation(ConfigDict({"ablation": "no_rerank"}))


def test_kl_objectives_puts_the_kl_term_on_the_named_objectives_only():
    c = skill1()
    c.rl.kl_coef, c.rl.kl_estimator = 0.05, "k3"
    cfgs = obj_lib.objective_configs(c)            # default "util": play only, as before the option
    assert (cfgs["util"].kl_coef, cfgs["distil"].kl_coef, cfgs["rerank"].kl_coef) == (0.05, 0.0, 0.0)
    c.rl.kl_objectives = "util, distil"
    cfgs = obj_lib.objective_configs(c)
    assert (cfgs["util"].kl_coef, cfgs["distil"].kl_coef, cfgs["rerank"].kl_coef) == (0.05, 0.05, 0.0)
    assert cfgs["distil"].kl_estimator == "k3" and cfgs["distil"].weight == c.rl.lambda_distil
    c.rl.kl_objectives = "util,distill"
    with pytest.raises(ValueError, match=r"unknown objective\(s\) \['distill'\]"):
        obj_lib.objective_configs(c)
    c.rl.kl_objectives = " "
    with pytest.raises(ValueError, match="kl_objectives is empty"):
        obj_lib.objective_configs(c)


def test_rerank_baseline_batch_mean_centres_ndcg_over_reranked_episodes_only():
    """rl.rerank_baseline: "none" (paper) keeps the raw NDCG; "batch_mean" subtracts the mean over
    the episodes that reranked. NDCG 0.9, 0.95, 1.0 on three reranked episodes and a fourth
    without a rerank: none [0.9, 0.95, 1.0, 0]; batch_mean: mean 0.95 -> [-0.05, 0, +0.05, 0].
    The value reaches the rerank rows of training_rows; a bad value fails objective_configs."""
    eps = [episode(i, 0, False, GOOD) for i in range(4)]
    for ep, ndcg in zip(eps[:3], (0.9, 0.95, 1.0)):
        ep.rank_gen, ep.r_rerank = gen("rerank", ep.index), ndcg
    assert obj_lib.rerank_advantages(eps) == pytest.approx([0.9, 0.95, 1.0, 0.0])
    assert obj_lib.rerank_advantages(eps, "batch_mean") == pytest.approx([-0.05, 0.0, 0.05, 0.0], abs=1e-12)
    gens, rows = obj_lib.training_rows(eps, "paper", ("util", "rerank"), rerank_baseline="batch_mean")
    got = [float(rows["rerank"][i]) for i, g in enumerate(gens) if g.objective == "rerank"]
    assert got == pytest.approx([-0.05, 0.0, 0.05], abs=1e-7)
    none_ranked = [episode(i, 0, False, GOOD) for i in range(2)]
    assert obj_lib.rerank_advantages(none_ranked, "batch_mean") == pytest.approx([0.0, 0.0])
    with pytest.raises(ValueError, match="rerank baseline"):
        obj_lib.rerank_advantages(eps, "group")
    cfg = skill1()
    assert obj_lib.rerank_baseline(cfg.rl) == "none"
    cfg.rl.rerank_baseline = "median"
    with pytest.raises(ValueError, match="rl.rerank_baseline"):
        obj_lib.objective_configs(cfg)


def test_trajectory_weighting_makes_the_token_mean_weigh_each_episode_once():
    """rl.util_weighting="trajectory": episode 0 (won, A = +a, a = 0.7071 after GRPO over [1, 0])
    plays turns of 3 and 1 tokens, episode 1 (lost, A = -a) one turn of 12. N_tok 16, E 2 ->
    weights 2, 2, 2/3. At ratio 1 the PPO surrogate's token mean is then (1/2)(-a + a) = 0,
    GRPO's per-sequence mean with the episode as the sequence, where the plain token mean is
    -a (4 - 12) / 16 = +a/2 (the lost episode's 12 tokens dominate). Also under clipping: every token's loss scales by its
    row's weight. A bad value or a pairing with another objective / aggregation is refused."""
    import jax.numpy as jnp

    from skillax.rl.aggregation import aggregate, safe_ratio
    from skillax.rl.losses import ppo_clip_loss

    eps = [episode(0, 0, True, valid=(True, True)), episode(1, 0, False, valid=(True,))]
    eps[0].query_gen = None
    eps[1].query_gen = None
    for g, n in zip(eps[0].play_gens + eps[1].play_gens, (3, 1, 12)):
        g.completion_ids, g.logprobs = list(range(n)), [-0.5] * n
    score_episodes(eps, "zero")
    _, plain = obj_lib.training_rows(eps, "paper", ("util",))
    gens, rows = obj_lib.training_rows(eps, "paper", ("util",), util_weighting="trajectory")
    a = 0.5 / np.sqrt(0.5)                                     # GRPO over [1, 0]: mean 0.5, sd (ddof 1) 0.7071
    assert plain["util"] == pytest.approx([a, a, -a], rel=1e-5)     # grpo_advantages: sd + 1e-6
    assert obj_lib.trajectory_token_weights(gens) == pytest.approx([2.0, 2.0, 2.0 / 3.0])
    assert rows["util"] == pytest.approx([2 * a, 2 * a, -2 * a / 3], rel=1e-5)

    def surrogate(adv, logp):
        mask = np.zeros((3, 12), np.float32)
        for i, n in enumerate((3, 1, 12)):
            mask[i, :n] = 1.0
        old = jnp.zeros((3, 12))
        loss, _ = ppo_clip_loss(jnp.asarray(logp), old, jnp.asarray(adv))
        return float(safe_ratio(*aggregate(loss, jnp.asarray(mask), "token_mean")))

    zeros = np.zeros((3, 12), np.float32)
    assert surrogate(plain["util"], zeros) == pytest.approx(a * (12 - 4) / 16, rel=1e-5)
    assert surrogate(rows["util"], zeros) == pytest.approx(0.0, abs=1e-6)
    # off-policy tokens, some clipped: the weighted loss equals the per-episode mean of each
    # episode's own token mean
    logp = np.random.default_rng(0).normal(0.0, 0.3, (3, 12)).astype(np.float32)
    per_tok, _ = ppo_clip_loss(jnp.asarray(logp), jnp.zeros((3, 12)), jnp.asarray(plain["util"]))
    per_tok = np.asarray(per_tok)
    ep0 = (per_tok[0, :3].sum() + per_tok[1, :1].sum()) / 4
    ep1 = per_tok[2, :12].mean()
    assert surrogate(rows["util"], logp) == pytest.approx((ep0 + ep1) / 2, rel=1e-5)

    with pytest.raises(ValueError, match="util_weighting"):
        obj_lib.training_rows(eps, "paper", ("util",), util_weighting="episode")
    cfg = skill1()
    assert obj_lib.util_weighting(cfg) == "token"
    cfg.rl.util_weighting = "trajectory"
    assert obj_lib.util_weighting(cfg) == "trajectory"
    obj_lib.objective_configs(cfg)
    for key, value in (("objective", "released_code"), ("aggregation", "seq_mean_token_mean")):
        bad = skill1()
        bad.rl.util_weighting = "trajectory"
        if key == "objective":
            bad.objective = value
        else:
            bad.rl.aggregation = value
        with pytest.raises(ValueError, match="util_weighting='trajectory'"):
            obj_lib.util_weighting(bad)
        with pytest.raises(ValueError, match="util_weighting='trajectory'"):   # the start-up check (checks.py)
            obj_lib.objective_configs(bad)
    cfg.rl.util_weighting = "sequence"
    with pytest.raises(ValueError, match="rl.util_weighting"):
        obj_lib.objective_configs(cfg)
