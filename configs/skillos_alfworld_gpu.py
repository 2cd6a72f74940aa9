"""SkillOS on ALFWorld with SmolLM2-135M-Instruct as curator AND frozen executor, sized for one
<= 10-minute command on one H200 share (~10 CPU cores) that includes the held-out evaluation.

Command (planner records of the valid_train games cached under $SKILLAX_CACHE/experts):
    timeout 560 python -m skillax.main --config configs/skillos_alfworld_gpu.py --workdir $OUT/skillos
Re-running with the same --workdir resumes RL from the checkpoint written when the time cap hit.

Differences from configs/skillos_alfworld.py (paper settings, SkillOS paper §4.1), all for the
time budget and the 135M models:
- 3 task groups x 4 rollouts per step (paper 32 x 8), |G| = 3 related tasks (paper 4): 36
  executor episodes per RL step instead of 1,024.
- ALFWorld episodes capped at 25 game steps (paper 50); executor actions <= 128 tokens (paper
  512); curator calls <= 256 tokens (paper 1024; the rule demonstrations are shorter) with
  prompts <= 1,792 tokens (paper 6,144) and trajectory evidence <= 2,000 characters (paper
  3,000), so every prompt + generation fits SmolLM2's 2,048-token cache.
- Executor play-format SFT warm start (``sft.play_steps`` = 80 x 24 rows x 1,024 tokens on
  expert replays of 32 valid_train games spread over the six task types, replayed on the env
  workers; off at paper settings): without it the frozen SmolLM2 emits ~98 % invalid actions (issue 6), every r_task is 0 and the curator's
  advantage carries no task signal. It runs before the frozen copy, so the curator starts
  from the same weights, and re-runs on resume (~20 s).
- Curator SFT warm start: 40 steps x 24 rows x 2,048 tokens at lr 5e-5 (paper: 3 epochs at
  5e-6 on teacher demonstrations) on the rule teacher's demonstrations for all valid_train
  groups (``sft.n_tasks`` = 200: groups come ordered by task type, so fewer would cover only
  the first types).
- Self-judged correctness from the environment (``executor.self_judge = "env"``, an oracle;
  paper: the executor judges itself): a 135M executor's yes/no answers are noise, and the
  curator SFT demonstrations show true outcomes.
- lr 5e-6 (paper 1e-6, tuned for 8B; as configs/skill1_alfworld_gpu.py).
- No content judge: ``reward.cnt = 0``, the paper's "w/o r_cnt" ablation (labelled in
  metrics.jsonl and eval.json); a 135M judge's 1-10 scores would only add noise.
- RL stops after the step that passes 3 minutes (``max_train_minutes``; a checkpoint is
  written, then evaluation runs); evaluation on 6 valid_unseen groups (18 tasks, paper 134
  games) with the curated repo vs No Memory.

Estimate on the H200 share, from the Skill1 GPU run (0.03-0.05 s of wall per ALFWorld env
step with 8 workers, 0.1-0.2 s per batched executor sampler call, 3-6 s per sampler compile):
- per RL step: 3 positions x 12 episodes = 36 episodes, 36 resets and ~36 x 22 = ~800 env
  steps (25-40 s); 3 x <= 25 = <= 75 batched executor calls (~12 rows, ~800 actions of
  <= 128 tokens: 8-15 s); 3 curator calls of 12 rows x <= 256 tokens (2-4 s); update on
  36 rows x 2,048 tokens (2-4 s): ~40-60 s per step, 3-5 steps in 3 minutes (step 0 also
  pays ~30 s of sampler compiles).
- eval: with repo 3 positions x 6 episodes + No Memory 18 episodes = 36 episodes, ~800 env
  steps, <= 100 executor calls, 3 curator calls of 6 rows: ~45-70 s.
- total: start + GGUF ~25 s, replay + play SFT ~35 s, curator SFT ~25 s, RL 180 s + the
  last step's overrun (<= 60 s), eval <= 70 s, export ~5 s: ~350-420 s, under 540 s.

Should show: per-step r and each term (r_task, r_fc, r_comp; r_cnt off), ops shifting
between insert_skill and update_skill, repo size, executor success; eval success (and
success_after_first) with the curated repo vs No Memory. A 135M pair learns little in three
minutes; the run proves the loop end to end at GPU speed.

Small CPU check (one RL step, the time cap hit after it, one eval group):
    python -m skillax.main --config configs/skillos_alfworld_gpu.py --workdir /tmp/skillos_cpu \
      --config.steps=2 --config.max_train_minutes=0.01 --config.groups_per_step=1 \
      --config.group_size=2 --config.tasks_per_group=2 --config.env.max_steps=3 \
      --config.env.workers=1 --config.executor.action_tokens=32 --config.rollout.curator_tokens=64 \
      --config.sft.steps=2 --config.sft.n_tasks=2 --config.sft.batch_size=2 \
      --config.sft.play_steps=2 --config.sft.play_tasks=2 --config.sft.play_max_len=512 \
      --config.train.micro_batch=2 --config.eval.n_groups=1
"""

from skillax.methods.skillos.config import skillos


def get_config():
    c = skillos(env_name="alfworld")
    c.model.path = "smollm2"
    c.model.dtype = "bfloat16"
    c.model.max_len = 2048
    c.steps = 100
    c.max_train_minutes = 3.0
    c.groups_per_step = 3
    c.group_size = 4
    c.tasks_per_group = 3
    c.checkpoint_every = 5
    c.env.max_steps = 25
    c.env.workers = -1              # the cores minus one (resolve_workers; the committed run used 10)
    c.executor.action_tokens = 128
    c.executor.self_judge = "env"
    c.rollout.curator_tokens = 256
    c.rollout.max_prompt_tokens = 1792
    c.rollout.evidence_chars = 2000
    c.rollout.max_skill_chars = 800
    c.train.lr = 5e-6
    c.train.total_steps = 100
    c.train.micro_batch = 12       # 36 curator rows per step -> 3 micro-batches
    c.sft.steps = 40
    c.sft.n_tasks = 200
    c.sft.batch_size = 24          # a multiple of train.micro_batch (partial batches are padded)
    c.sft.lr = 5e-5
    c.sft.max_len = 2048
    c.sft.play_steps = 80
    c.sft.play_tasks = 32
    c.sft.play_lr = 5e-5
    c.sft.play_max_len = 1024
    c.eval.n_groups = 6
    c.reward.cnt = 0.0
    return c
