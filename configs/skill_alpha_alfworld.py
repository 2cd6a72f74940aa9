"""Skill-alpha experience-to-skill on ALFWorld at the paper's settings where a 135M model
allows (DESIGN.md §1.1; issues 9, 19): the Skill-alpha paper-settings config.

The fuller setting (8 lanes, 10 RL steps, 30-step games, 48 eval games); never timed on a
GPU and not sized for the 10-minute budget -- configs/skill_alpha_alfworld_gpu.py is the
timed variant, configs/skill_alpha_alfworld_learning.py the learning campaign (both read
worker + planner evidence, "worker+expert", for a 135M worker that rarely wins).

Command (one H200, SmolLM2 as editor and frozen worker):
    python -m skillax.main --config configs/skill_alpha_alfworld.py --workdir runs/skill_alpha_alfworld

Ablations and baselines of the paper (Skill-alpha, Table 4 / Table 5) -> overrides:
    SFT only (Table 4 "SFT only")        --config.steps=0
    w/o rollback reward (Table 4)        --config.unit.reward=own_score   (reward = the edited skill's own score)
    w/o MERGE/PRUNE (Table 4; tau2 39.17) --config.unit.actions=CREATE,UPDATE,NOOP
    w/o NOOP (Table 4)                   --config.unit.actions=CREATE,UPDATE,MERGE,PRUNE
    evidence order (Table 5: source / shuffled / reverse = 55.83 / 51.67 / 57.50 on tau2)
                                         --config.evidence.sequence=source|shuffled|reverse
    evidence units per chunk (Table 5: 1 / 2 / 4 / 8 = 47.50 / 53.33 / 55.83 / 48.33)
                                         --config.evidence.units_per_chunk=1|2|4|8
    evidence source (issue 19, item 9)   --config.evidence.source=worker|worker+expert|expert
Beyond the paper:
    --config.unit.anchors_k=3        k anchored queries, mean score difference
    --config.unit.graded=True        graded reward r_edit - r_ctrl
    --config.unit.carry=first        on-policy carry instead of the best verified edit
    --config.sft.noop_examples=True  NOOP transcripts in the editor SFT data
    --config.sft.rule_level=type     task-type-level teacher rules (X / Y for object and destination)
    --config.model.path=/path/to/Qwen3-8B --config.worker.kind=openai --config.worker.openai.model=gpt-4o
    (paper-scale: Qwen3-8B editor, GPT-4o worker; then set sft.play_steps=0)

Hyper-parameters (key, value here, source; seed = ../shared/seeds/000, the paper's summary;
tests/test_paper_settings.py pins every line, value and source tag):
  unit.group_size           8               paper [000 method details]: GRPO group size G = 8
  lanes                     8               paper [000 method details]: batch 8 (units per RL step)
  train.lr                  5e-7            paper [000 method details]: actor lr 5e-7
  train.schedule            "constant"      paper [000 method details]: one stated actor rate (the
      cosine schedule is the SFT's) [issue 19.7]
  rl.temperature            1.0             paper [000 method details]: rollout temperature 1.0
  rl.entropy_coef           0.001           paper [000 method details]: entropy coefficient 0.001
  rl.kl_coef                0.0             paper [000 method details]: KL off
  rl.eps_high               0.2             paper [000 prerequisites]: clip(rho, 1 - eps, 1 + eps) is
      symmetric (= rl.eps_low); epsilon's value is not stated
  evidence.max_prompt_tokens 8192           paper [000 method details]: prompt <= 8192 tokens
  evidence.units_per_chunk  4               paper [000 method details]: <= 4 trajectories per chunk
      (Table 5: 4 units best, 1 / 2 / 8 worse)
  evidence.max_steps        8               paper [000 method details]: <= 8 steps per trajectory
  evidence.max_traj_chars   3000            paper [000 method details]: <= 3000 characters per trajectory
  evidence.source           "worker"        paper [000 reproduction]: the worker's own executions
      (GPT-4o runs) are the experience evidence [issue 19.9]; "worker+expert" adds planner plans
  evidence.sequence         "source"        paper [000 results]: Table 5's source order
  unit.actions              "CREATE,UPDATE,MERGE,PRUNE,NOOP" paper [000 method details]: the action
      space
  unit.reward               "rollback"      paper [000 core method]: 1 if a non-NOOP edit beats
      r_ctrl; NOOP 1 when no valid edit does; else 0
  unit.anchors_k            1               paper [000 core method]: one anchored query per edit
  unit.graded               False           paper [000 core method]: binary rollback reward
  sft.lr                    5e-6            paper [000 method details]: SFT lr 5e-6
  sft.warmup_ratio          0.05            paper [000 method details]: SFT warmup 0.05 (then cosine:
      PolicyEngine.sft)
  model.path                "smollm2"       deviation: paper Qwen3-8B editor [000 core method]; the
      embedded SmolLM2-135M runs on one GPU in minutes
  worker.kind               "frozen"        deviation: paper GPT-4o / Claude-Sonnet-4.5 worker [000 core
      method]; here a frozen copy of the play-SFT policy ("openai" = an endpoint)
  unit.max_new_tokens       512             deviation: paper max response 32768 [000 method details];
      SmolLM2 has 8192 positions and the prompt budget is model.max_len - this = 7680 tokens
  sft.batch_size            8               deviation: paper SFT batch 32 [000 method details]; ours
      for the small rule-teacher set of a 135M editor
  sft.steps                 20              deviation: paper 3 epochs [000 method details] of teacher
      transcripts; here 20 steps over the rule teacher's
  sft.teacher               "rule"          deviation: paper DeepSeek-V4-Pro transcripts [000 method
      details]; here the deterministic rule teacher ("openai" = an endpoint)
  rl.eps_low                0.2             ours: epsilon (not stated; inert at rl.mini_batches = 1)
  rl.mini_batches           1               ours: one update per rollout batch (seed states none)
  rl.epochs                 1               ours: one pass over the rollout batch (seed states none)
  unit.carry                "best"          ours: the best verified edit carries forward (DESIGN §1.1)
  worker.temperature        0.0             ours: greedy worker (the comparison differs only by skill)
  infer.temperature         0.0             ours: greedy editing at inference
  steps                     10              ours: RL steps (not stated)
  env.max_steps             30              ours: game step cap (the paper has no ALFWorld)
  evidence.n_evidence_per_family 4          ours: evidence games per task type
  evidence.n_anchor_per_family 8            ours: anchor games per task type
  eval.n_tasks              48              ours: valid_unseen games evaluated
  sft.play_steps            100             ours: worker play SFT (the paper's worker is GPT-4o)
  sft.play_lr               1e-5            ours: worker play SFT lr
  model.max_len             8192            ours: SmolLM2's positions

Pipeline: SmolLM2 play-format SFT on planner demonstrations (the frozen worker is a copy of the
result); evidence = the worker's own trajectories of 4 valid_train games per task type (6
types, 4 per chunk -> 6 chunks, round robin); anchored query = another valid_train game of
the same type; verifier = game success. Editor SFT on the deterministic teacher's edits (3
passes), then GRPO with the rollback reward: 8 lanes x G = 8 per step, lr 5e-7, T = 1.0,
entropy 0.001, KL off, prompt <= 8192 tokens, 4 evidence units per chunk. Finally the
trained editor edits the stream once -> runs/.../skill/household-tasks/ (SKILL.md +
changelog) and the worker plays 48 valid_unseen games with z_T vs no skill.

Should show: metrics.jsonl per step (reward/mean, action/{CREATE,UPDATE,MERGE,PRUNE,NOOP},
valid_rate, r_ctrl, edit_beats_ctrl, units_with_variance, worker_jobs, time/{editor,worker,
update_s}); results.json with the inference action histogram; eval.json and
eval/<condition>__valid_unseen.jsonl for no_skill and with_skill.
Paper (GPT-4o worker, tau2): 55.83 vs 33.33 no-skill; without MERGE/PRUNE 39.17.
Without ../shared the environment falls back to TextWorld (env.name="auto").
"""

from skillax.methods.skill_alpha.config import skill_alpha


def get_config():
    c = skill_alpha("experience")
    c.model.path = "smollm2"
    c.model.max_len = 8192          # SmolLM2 positions; prompt budget = 8192 - max_new_tokens
    c.steps = 10
    c.lanes = 8
    c.checkpoint_every = 5
    c.unit.group_size = 8
    c.unit.max_new_tokens = 512
    c.evidence.source = "worker"          # paper (issue 19 item 9); the gpu/learning configs: worker+expert
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
    c.train.length_buckets = (1024, 2048, 4096, 6144, 8192)
    return c
