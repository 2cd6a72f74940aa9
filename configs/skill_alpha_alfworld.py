"""Skill-alpha experience-to-skill on ALFWorld, fuller size (DESIGN.md §1.1; issue 9).

The fuller setting (8 lanes, 10 RL steps, 30-step games, 48 eval games); never timed on a
GPU and not sized for the 10-minute budget -- configs/skill_alpha_alfworld_gpu.py is the
timed variant (3-minute RL clock, per-phase cost estimate in its docstring).

Command (one H200, SmolLM2 as editor and frozen worker):
    python -m skillax.main --config configs/skill_alpha_alfworld.py --workdir runs/skill_alpha_alfworld
Variants (the ablation table):
    --config.unit.anchors_k=3        k anchored queries, mean score difference (beyond the paper)
    --config.unit.graded=True        graded reward r_edit - r_ctrl (beyond the paper)
    --config.unit.carry=first        on-policy carry instead of the best verified edit
    --config.model.path=/path/to/Qwen3-8B --config.worker.kind=openai --config.worker.openai.model=gpt-4o
    (paper-scale: Qwen3-8B editor, GPT-4o worker; then set sft.play_steps=0)

Pipeline: SmolLM2 play-format SFT on planner demonstrations (the frozen worker is a copy of the
result); evidence = worker + planner trajectories of 4 valid_train games per task type (6
types, 4 per chunk -> 12 chunks, round robin); anchored query = another valid_train game of
the same type; verifier = game success. Editor SFT on the deterministic teacher's edits (3
passes), then GRPO with the rollback reward: 8 lanes x G = 8 per step, lr 5e-7, T = 1.0,
entropy 0.001, KL off, prompt <= 8192 tokens, 4 evidence units per chunk. Finally the
trained editor edits the stream once -> runs/.../skill/household-tasks/ (SKILL.md +
changelog) and the worker plays 48 valid_unseen games with z_T vs no skill.

Should show: metrics.jsonl per step (reward/mean, action/{CREATE,UPDATE,MERGE,PRUNE,NOOP},
valid_rate, r_ctrl, edit_beats_ctrl, worker_jobs, time/{editor,worker,update_s});
results.json with the inference action histogram and eval {with_skill, no_skill, delta}.
Paper (GPT-4o worker, tau2): 55.83 vs 33.33 no-skill; without MERGE/PRUNE 39.17.
Without ../shared the environment falls back to TextWorld (env.name="auto").
"""

from skillax.methods.skill_alpha.config import skill_alpha


def get_config():
    c = skill_alpha("experience")
    c.model.path = "smollm2"
    c.model.max_len = 8192 + 1024
    c.steps = 10
    c.lanes = 8
    c.checkpoint_every = 5
    c.unit.group_size = 8
    c.unit.max_new_tokens = 512
    c.evidence.n_evidence_per_family = 4
    c.evidence.n_anchor_per_family = 8
    c.env.name = "auto"
    c.env.train_split = "valid_train"
    c.env.eval_split = "valid_unseen"
    c.env.max_steps = 30
    c.env.workers = 16
    c.worker.action_tokens = 64
    c.eval.n_tasks = 48
    c.sft.play_steps = 100
    c.sft.play_lr = 1e-5
    c.sft.n_tasks = 24
    c.sft.steps = 20
    c.sft.batch_size = 8
    c.train.micro_batch = 16
    c.train.length_buckets = (1024, 2048, 4096, 6144, 8192, 9216)
    return c
