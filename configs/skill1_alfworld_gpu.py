"""Skill1 on ALFWorld with SmolLM2-135M-Instruct, sized for a <= 10-minute run on one H200.

Command (what produced benchmarks/results/skill1_alfworld_gpu/):
    python -m skillax.main --config configs/skill1_alfworld_gpu.py --workdir runs/skill1_gpu

Differences from configs/skill1_alfworld.py (paper settings), all for the time budget and the
135M policy: 8 tasks x group 4 per step (paper 16 x 8); at most 30 game steps (paper 50);
actions <= 128 and distillations <= 256 tokens (paper 2048); lr 5e-6 (paper 1e-6, tuned for
7B); an SFT warm start of 120 steps on planner transcripts of 64 valid_train games, plus one
distil demonstration per game (``sft.distil_demos``, added after the committed run); RL stops
after the step that passes 4.5 minutes (``max_train_minutes``; re-running resumes); held-out
evaluation on 24 valid_unseen games with and without the library.
Should show: per-step success, rerank NDCG and library growth, and eval success with vs
without the library. A 135M model learns little in minutes; the run proves the loop at
GPU speed.
"""

from skillax import config_defaults


def get_config():
    c = config_defaults.skill1(env_name="alfworld")
    c.model.path = "smollm2"
    c.model.dtype = "bfloat16"
    c.model.max_len = 4096
    c.steps = 100
    c.max_train_minutes = 4.5
    c.tasks_per_step = 8
    c.group_size = 4
    c.checkpoint_every = 5
    c.env.max_steps = 30
    c.env.workers = -1              # the cores minus one (resolve_workers; the committed run used 8)
    c.rollout.action_tokens = 128
    c.rollout.distil_tokens = 256
    c.train.lr = 5e-6
    c.train.total_steps = 100
    c.train.micro_batch = 32
    c.sft.steps = 120
    c.sft.n_tasks = 64
    c.sft.batch_size = 32
    c.sft.lr = 5e-5
    c.sft.max_len = 2048
    c.sft.distil_demos = True      # distil JSON demos from the planner episodes (see config_defaults)
    c.eval.n_tasks = 24
    return c
