"""Skill-alpha experience-to-skill on ALFWorld, SmolLM2-135M-Instruct as editor and frozen
worker, sized for ONE <= 600 s command on an H200 share (issue 9's GPU run; DESIGN.md §1.1).

Command (planner records of the valid_train games cached; ALFWorld from ../shared/data/alfworld):
    timeout 560 python -m skillax.main --config configs/skill_alpha_alfworld_gpu.py --workdir runs/skill_alpha
Multi-anchor variant (beyond the paper; same config, RL stops on the same clock with fewer steps):
    timeout 560 python -m skillax.main --config configs/skill_alpha_alfworld_gpu.py \
        --workdir runs/skill_alpha_k3 --config.unit.anchors_k=3
Re-running a command with the same workdir resumes RL from its checkpoint (the play SFT is
re-run, the evidence stream is read back from evidence_stream.json).

Pipeline: worker play-format SFT (80 steps x 32 rows <= 2048 tokens, lr 5e-5, on planner
transcripts of 36 valid_train games; the frozen worker is a copy of the result) -> evidence =
worker (played with z_0 = no rules) + planner trajectories of 4 valid_train games per task
type (6 types x 8 trajectories, 4 per chunk -> 12 chunks, round robin); anchored queries = 8
other valid_train games per type; verifier = game success within 25 steps -> editor SFT on
the deterministic rule teacher's edits (6 passes over the stream = 72 transcripts, 36 steps
x 8 rows of <= 4096 tokens, lr 5e-5) -> GRPO with the rollback reward, 4 lanes x G = 8
candidate edits per step, until the step that passes max_train_minutes = 3 (checkpoint;
`steps` = 50 is only a ceiling) -> the trained editor edits the stream once (greedy) ->
<workdir>/skill/household-tasks/ (SKILL.md + changelog.jsonl + CHANGELOG.md) -> the worker
plays 30 valid_unseen games with z_T and with no skill.

Paper settings kept: G = 8, T = 1.0, entropy 0.001, KL off, editor prompt <= 8192 tokens,
4 evidence units per chunk (8 steps / 3000 characters per trajectory), carry = best verified
edit, binary rollback reward, one anchored query (k = 1). Differences, all for the 10-minute
budget and the 135M models:
  * 4 lanes (units per step; paper batch 8) and a 3-minute RL clock (~5 steps at k = 1, ~3
    at k = 3): a step costs one lock-step batch of worker games, so the step count, not the
    batch, is what the clock buys; the run proves the loop at GPU speed, it cannot converge.
  * lr 5e-6 (paper 5e-7, tuned for the Qwen3-8B editor): a handful of updates at 5e-7 leave a
    135M editor unchanged (configs/skill1_alfworld_gpu.py raises Skill1's lr 5x likewise).
  * editor SFT lr 5e-5 for 36 steps (~4 epochs; paper 3 epochs at 5e-6 on a teacher's data):
    the 135M editor needs the higher rate to learn the <think> + JSON edit format in seconds.
  * editor responses <= 384 tokens (paper 1024; the rule teacher's edits are ~70-150 tokens).
  * worker play SFT (not in the paper, whose worker is GPT-4o): SmolLM2 follows the play format
    only after it; game cap 25 steps (ALFWorld's 50); worker actions <= 64 tokens.
  * held-out eval on 30 valid_unseen games (4-7 per type; one game moves a rate by 3.3 points).

Cost estimate per phase (k = 1; W = 12 env processes; a "turn" = one lock-step worker call +
one env step of every live game). Inputs: Skill1's GPU run (SmolLM2, same machine): ~0.7-0.9 s
per turn for 32 games on 8 processes (env + host + sampling), sampling ~4-5 s per RL step,
update 3-10 s for ~750 x 768 tokens, SFT 120 x 32 x 2048 in 45 s, 3-6 s per new sampler
shape; measured on CPU here: ALFWorld reset 0.6-0.8 s warm / 1.6-3.7 s on a game's first
build, step 0.10-0.14 s (2 slow cores); editor prompts: an ALFWorld evidence unit is 90-210
tokens at 3-4 steps (~250-500 at the 8-step cap), so a 4-unit prompt is ~1-2.5k tokens
(0.9k measured for 4 short units), and the rule teacher's answers are 70-100 tokens.
  * start + GGUF load: ~30 s.
  * play SFT: 36 planner replays (~540 turns) on W processes ~10 s; 80 x 32 x 2048 ~30 s.
  * evidence: 24 worker games (z_0), <= 25 turns, <= 600 env steps (planner cached) ~20 s,
    plus the worker's first sampler compiles ~20 s.
  * editor SFT: 72 transcripts, 36 steps x 8 rows x 4096 tokens ~10-15 s with its compile.
  * RL step: editor 32 samples, ~60k prompt tokens + <= 12k new (<= 384 each), ~3 s; worker
    <= 4 x (1 + 8) = 36 games (invalid / NOOP / duplicate edits spend none), <= 25 turns,
    <= 900 env steps, ~25 s; update 32 rows x 2-3k tokens ~2 s. ~30 s per step, step 0 ~60 s
    with compiles -> the clock stops after ~5 steps, <= ~210 s.
    k = 3: <= 108 games, <= 2,700 env steps per step, ~55 s -> 3-4 steps, <= ~240 s.
  * inference: 12 sequential batch-1 editor calls (~1-2.5k prompt, <= 384 new) ~15 s + ~10 s
    of compiles.
  * eval: 60 games (30 x {z_T, no skill}), <= 25 turns, <= 1,500 env steps, ~40 s.
  * total ~390 s (k = 1), ~420 s (k = 3): ~120 s of margin under 540 s for the shared GPU and
    CPUs. None of this was measured on the GPU yet; if it runs long, lower max_train_minutes
    first (every other phase is fixed work) and read time/* in metrics.jsonl.

Should show: metrics.jsonl per RL step (reward/mean, action/{CREATE,UPDATE,MERGE,PRUNE,NOOP,
invalid}, valid_rate, r_ctrl, r_edit, edit_beats_ctrl, worker_jobs, units_skipped,
trunc/*, time/{editor,worker,update_s,step_s}); the line "max_train_minutes=3.0 reached after
step N"; results.json with play_sft / edit_sft NLLs, setting info (worker_evidence_success),
the inference action histogram and eval {with_skill, no_skill, delta, per_family}. Paper
(GPT-4o worker, tau2): 55.83 vs 33.33 no-skill; without MERGE/PRUNE 39.17. At this size the
expected outcome is a valid loop (valid_rate well above 0 after the editor SFT, nonzero
r_ctrl, mixed actions) and an eval delta within noise of 0.
configs/skill_alpha_alfworld.py is the fuller (untimed) setting; configs/skill_alpha_alfworld_learning.py
is the learning campaign (warm start shared by its arms, 20 minutes of RL, every held-out game).
"""

from skillax.methods.skill_alpha.config import skill_alpha


def get_config():
    c = skill_alpha("experience")
    c.model.path = "smollm2"
    c.model.dtype = "bfloat16"
    c.model.max_len = 8192          # SmolLM2 positions; prompt budget = 8192 - max_new_tokens
    c.steps = 50                   # ceiling; max_train_minutes stops RL first
    c.max_train_minutes = 3.0
    c.lanes = 4
    c.checkpoint_every = 5
    c.unit.group_size = 8
    c.unit.max_new_tokens = 384
    c.evidence.source = "worker+expert"   # the paper default is "worker" (issue 19, item 9)
    c.evidence.n_evidence_per_family = 4
    c.evidence.n_anchor_per_family = 8
    c.env.name = "alfworld"
    c.env.train_split = "valid_train"
    c.env.eval_split = "valid_unseen"
    c.env.max_steps = 25
    c.env.workers = -1              # the cores minus one (resolve_workers; the estimate above: W = 12)
    c.worker.action_tokens = 64
    c.eval.n_tasks = 30
    c.sft.play_steps = 80          # worker play format (before the frozen copy)
    c.sft.play_lr = 5e-5
    c.sft.play_batch_size = 32
    c.sft.play_max_len = 2048
    c.sft.n_tasks = 36
    c.sft.steps = 36               # editor edit format on the rule teacher's transcripts
    c.sft.episodes = 6
    c.sft.batch_size = 8
    c.sft.lr = 5e-5
    c.sft.max_len = 4096           # edit transcripts are ~1-3k tokens; rows are padded to this
    c.train.lr = 5e-6
    c.train.total_steps = 50
    c.train.micro_batch = 8
    c.train.length_buckets = (1024, 2048, 3072, 4096, 6144, 8192)
    return c
