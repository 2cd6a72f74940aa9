"""SkillOS configuration preset at paper values (DESIGN.md §1.2); ``configs/skillos_*.py`` shrink it.

Sizes: ``groups_per_step`` task groups per step (paper batch 32), ``group_size`` rollouts per
group (paper N = 8), ``tasks_per_group`` tasks per group (|G|). The trainer reads
``train``/``rl`` (:mod:`skillax.config_defaults`); ``rl.temperature`` is set equal to the
curator's rollout ``temperature`` (PITFALLS 6).

``max_train_minutes`` > 0: RL stops after the step whose end passes that wall-clock budget
(measured from the start of RL), with a checkpoint, then evaluates and exports; a re-run
resumes (as Skill1's).

``sft.play_steps`` > 0 (ours, not the paper's; off at paper settings): play-format SFT of the
*executor* on planner/walkthrough transcripts of ``sft.play_tasks`` train games (spread over
task types; ``methods.common.play_sft``) before the frozen copy is taken, so curator and
executor both start from it; it re-runs on resume (the frozen executor is not checkpointed).
The paper's executors are Qwen3-8B/32B; a 135M executor without it emits ~98 % invalid
actions (issue 6), every r_task is 0 and the curator has nothing to learn from.
"""
from __future__ import annotations

import ml_collections

from skillax import config_defaults


def skillos(env_name: str = "auto") -> ml_collections.ConfigDict:
    c = config_defaults.base("skillos")
    c.steps = 100
    c.groups_per_step = 32          # paper: batch size 32
    c.group_size = 8                # paper: N = 8 rollouts per task group
    c.tasks_per_group = 4           # |G|
    c.min_group_tasks = 2           # smaller leftover groups are dropped
    c.grouping = "attributes"       # "attributes" | "random" (the paper's w/o-grouping ablation)
    c.temperature = 1.0             # curator rollout temperature
    c.checkpoint_every = 10
    c.keep_checkpoints = 2
    c.max_train_minutes = 0.0       # > 0: stop RL (with a checkpoint) after the step that passes it
    c.env = ml_collections.ConfigDict(dict(
        name=env_name, train_split="valid_train", eval_split="valid_unseen", max_steps=50, workers=0,
        n_train_tasks=0, n_eval_tasks=0, tw_games_per_family=8, tw_families="", data_dir="",
        rg_datasets="", rg_per_dataset=8, aime_dir=""))
    c.executor = ml_collections.ConfigDict(dict(
        kind="policy",              # "policy" (frozen copy of the initial policy) | "openai"
        temperature=0.4, action_tokens=256, self_judge="executor", judge_tokens=8,
        model="", base_url="", api_key_env="OPENAI_API_KEY", max_retries=2, timeout_s=60.0,
        max_concurrency=8))
    c.judge = ml_collections.ConfigDict(dict(
        kind="off",                 # "off" (r_cnt = 0, logged "off") | "openai" | "policy"
        model="", base_url="", api_key_env="OPENAI_API_KEY", max_retries=2, timeout_s=120.0,
        scale=10, max_tokens=256))
    c.rollout = ml_collections.ConfigDict(dict(
        top_k=3, retrieval_fields="name,description,body", curator_tokens=1024, curator_prefix="",
        max_prompt_tokens=6144, evidence_steps=8, evidence_chars=3000, max_skill_chars=1500))
    c.play = ml_collections.ConfigDict(dict(
        history_k=2, max_admissible=40, max_obs_chars=600, max_skill_chars=800, max_skills=3,
        require_think=True, invalid_penalty=0.1, max_action_chars=200))
    c.reward = ml_collections.ConfigDict(dict(fc=1.0, cnt=0.1, comp=0.05))
    c.rl = config_defaults.rl()
    c.train = config_defaults.train(lr=1e-6, total_steps=100)
    c.sft = config_defaults.sft()
    c.sft.max_len = 7168            # curator prompt (<= rollout.max_prompt_tokens) + tool calls
    c.sft.teacher = "rules"         # "rules" (expert trajectories) | "worker" (executor endpoint as teacher)
    c.sft.groups_per_stream = 2
    c.sft.unused_after = 4
    c.sft.play_steps = 0            # executor play-format SFT (module docstring); 0 = off
    c.sft.play_lr = 5e-5
    c.sft.play_tasks = 32           # train games whose expert replays are the play transcripts
    c.sft.play_max_len = 1024       # play transcript row length (prompt + one action)
    c.eval = ml_collections.ConfigDict(dict(n_groups=8, temperature=0.4, every=0, no_repo=True))
    return c
