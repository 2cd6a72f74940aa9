"""Skill-alpha learning campaign on ALFWorld (issue 18; protocol benchmarks/results/learning/PROTOCOL.md):
SmolLM2-135M-Instruct (bf16) as the trained editor and as the frozen worker, 20 minutes of RL,
paired evaluation on every valid_unseen (134) and valid_seen (140) game.

Arms (launched together on one H200 by benchmarks/device/learning.sh as alpha_sft / alpha_rl;
WS = a warm-start folder both can reach):
    # sft: the SFT stages, warm start saved, no RL; z_T by the SFT-only editor;
    # eval no_skill + with_skill + handwritten (eval.handwritten_dir is set here)
    python -m skillax.main --config configs/skill_alpha_alfworld_learning.py --workdir runs/alpha_sft \
        --config.steps=0 --config.warmstart.save_dir=WS
    # rl: the same editor, worker and stream (loaded, both SFT stages skipped), RL, z_T by the
    # RL editor; eval with_skill only (the default of a run that loads a warm start: no_skill and
    # handwritten depend on the frozen worker alone, which the sft arm evaluated on the same games)
    python -m skillax.main --config configs/skill_alpha_alfworld_learning.py --workdir runs/alpha_rl \
        --config.warmstart.load_dir=WS --config.warmstart.wait_s=900 \
        [--config.train_until_file=DEADLINE_FILE]
Optional arms on the same WS (same overrides as rl): ``--config.unit.graded=True`` (graded reward),
``--config.unit.actions=CREATE,UPDATE,NOOP`` (w/o MERGE/PRUNE), ``--config.unit.reward=own_score``
(w/o rollback reward), ``--config.evidence.sequence=shuffled|reverse`` (evidence order).
Shared lease: ``train_until_file`` / ``train_until_unix`` stop RL in time for the arm's
evaluation (estimate below: keep >= ~6 min); a re-run with the same workdir resumes.

What it should show (eval.json, eval/<condition>__<split>.jsonl, benchmarks/results/learning):
* sft arm: success with no skill, with z_T of the SFT editor and with z_hand (the six
  hand-written skills of benchmarks/learning/handwritten_skills as rules: the ceiling of what a
  correct skill gives this worker), per split, per task type, Wilson intervals, paired deltas;
* rl arm: success with z_T of the RL editor on the same games (paired with the sft arm's
  no_skill records: same worker, same games); metrics.jsonl per RL step with reward/mean,
  units_with_variance, edit_beats_ctrl / edit_below_ctrl, action mix, valid_rate, r_ctrl.
Target (issue 18): rl with_skill above no_skill with the paired 95 % interval above 0. Paper
(GPT-4o worker, tau2): 55.83 with the skill vs 33.33 without; w/o MERGE/PRUNE 39.17.

Hyper-parameters (source):
* editor and worker: SmolLM2-135M-Instruct bf16 (protocol); KV cache 8192 tokens = SmolLM2's
  positions (the editor prompt budget is 8192 - 384 new tokens; prompts are ~1-2.5k).
* worker play SFT (ours; the paper's worker is GPT-4o): 80 steps x 32 rows <= 2048 tokens,
  lr 5e-5 (configs/skill_alpha_alfworld_gpu.py, 36.5-54.2 s on an H200 for 80 x 32 x 2048)
  on the planner replays of every valid_train game that is neither evidence nor anchor: 200 -
  24 - 36 = 140 games (Pick 36, Pick2 35, Clean 27, Cool 18, Heat 15, Look 9: all that is
  left, so stratified as valid_train itself), ~800 one-turn rows, ~3 epochs. Disjoint on
  purpose: the play SFT memorises its games (NLL 1.48 -> 0.0015 in the GPU run) and a memorised
  anchor is won whatever the skill says; in the earlier GPU config 11 of 48 anchors were SFT games.
* evidence (issue 19 item 9 switch, ours for this worker): ``evidence.source = "worker+expert"``
  -- the paper's default is the worker's own executions ("worker"), but this worker won 5 of
  24 evidence games in the GPU run (and every one of its held-out wins, in any condition, was
  a look_at game): a worker-only chunk of 4 runs holds no success with probability 0.79^4 =
  0.39 overall and ~1 for the five types it never solved, so most chunks show nothing to learn
  a rule from (the paper's GPT-4o worker's runs do); with 4 games per type the worker-only
  stream is also one chunk per type (6 edits per pass; teacher data 32 CREATE, 2 PRUNE, 2 MERGE,
  no UPDATE). 4 evidence games per type (24 worker + 24 planner trajectories), 4 units per
  chunk (paper), 8 steps / 3000 characters per trajectory (paper) -> 12 chunks, round robin (ours).
* anchors: 6 other valid_train games per type; ``unit.anchors_k = 3`` (beyond the paper's 1,
  issue 18's lever): in the GPU runs 2 of 12 units had reward variance at k = 3 vs 1 of 24 at
  k = 1 (17 % vs 4 %) for 2.4-2.8x the worker jobs (36-66 vs 15-24 per step), i.e. ~2x the
  informative units per minute of RL; binary rollback reward (paper) on the mean of the 3.
* kept off, measured (switches exist): ``unit.graded`` (GPU run: variance in 13/24 units but
  from invalid = -1; 0 of 192 edits beat the control, it trained validity 0.66 -> 0.97);
  ``sft.noop_examples`` (8 % NOOP in the teacher data here -> ~half the groups would sample a
  NOOP, and in a tie group -- 23 of 24 units at k = 1 -- the rule rewards NOOP over every edit:
  variance that teaches "do not edit", not which edit helps); worker temperature > 0 (at T = 0
  edits changed an anchor's outcome 1 time in ~149; at T > 0 without common random numbers a
  control/edit pair differs by chance with probability 2p(1 - p) = 15 % at p = 0.083, ~20 times
  the signal; common sampler keys per anchor need an engine change, see the Skill-alpha report).
* editor SFT (paper: teacher transcripts, 3 epochs, lr 5e-6, warmup 0.05, cosine): the rule
  teacher (ours) over 6 passes of the stream = 72 transcripts, 36 steps x 8 rows <= 4096, lr
  5e-5 (GPU config: the 135M editor needs the higher rate to learn the format in seconds);
  ``sft.rule_level = "type"`` (issue 18: rules at the level of a task type, the goal object as
  X and its destination as Y): instance-level rules name the held-out game's object for only
  30/134 valid_unseen and 33/140 valid_seen games (object and destination: 15 and 16).
* RL (paper): G = 8, T = 1.0, entropy 0.001, KL off, eps 0.2, carry = best verified edit
  (ours, DESIGN.md), 4 lanes (paper batch 8; GPU config), constant lr 1e-5
  (campaign 2, below; campaign 1 5e-6 = the paper's 5e-7 for an 8B editor x10, as the GPU
  config), editor responses <= 384 tokens (GPU config),
  ``max_train_minutes = 20`` (protocol), ``steps = 400`` only a ceiling.
* games: 30 steps (protocol; ALFWorld's 50), worker actions <= 64 tokens, 4 env processes
  (protocol: the 16 cores are shared by every arm).
* evaluation (protocol): valid_unseen + valid_seen, every game (``eval.n_tasks = 0``), one
  greedy episode per game per condition, chunks of 140 episodes.

Cost estimate (not measured on the GPU; CPU: ALFWorld reset 0.6-0.8 s warm, step 0.10-0.14 s):
sft arm ~4-5 min to the warm start (play-SFT replays of 140 games on 4 processes ~1.5 min, SFT
~1 min, 24 evidence games ~40 s, editor SFT ~15 s), then inference ~30 s and 822 evaluation
episodes (274 games x 3 conditions) in 6 chunks of 30 turns, ~4-6 s per turn of 140 games
(env-bound on 4 processes) -> ~12-18 min. rl arm: waits for the warm start, RL 20 min (a step
plays up to 4 x 9 x 3 = 108 anchored games, ~60-90 s -> ~15-20 steps), 274 evaluation
episodes ~4-6 min.
  RL step size (issue 18 lever, campaign 2): campaign 1 (lr 5e-6, one update per step) left the
  policy where SFT put it -- PPO clip fraction ~0.000 on every step, reward flat or falling
  (first half 0.13, second half 0.08) -- so campaign 2 uses lr 1e-5 and rl.mini_batches = 4 (k
  updates per rollout batch, one lane's group of 8 edits per mini-batch; later updates off-
  policy under the PPO clip): ~8x campaign 1's movement per step.
"""

from skillax.methods.skill_alpha.config import skill_alpha


def get_config():
    c = skill_alpha("experience")
    c.model.path = "smollm2"
    c.model.dtype = "bfloat16"
    c.model.max_len = 8192          # SmolLM2 positions; prompt budget = 8192 - max_new_tokens
    c.steps = 400                  # ceiling; max_train_minutes / train_until_unix stop RL first
    c.max_train_minutes = 20.0
    c.lanes = 4
    c.checkpoint_every = 5
    c.unit.group_size = 8
    c.unit.anchors_k = 3
    c.unit.max_new_tokens = 384
    c.evidence.source = "worker+expert"
    c.evidence.n_evidence_per_family = 4
    c.evidence.n_anchor_per_family = 6
    c.env.name = "alfworld"
    c.env.train_split = "valid_train"
    c.env.eval_split = "valid_unseen"
    c.env.max_steps = 30
    c.env.workers = 4
    c.worker.action_tokens = 64
    c.eval.splits = "valid_unseen,valid_seen"
    c.eval.n_tasks = 0
    c.eval.batch_size = 140
    c.eval.handwritten_dir = "benchmarks/learning/handwritten_skills"
    c.sft.play_steps = 80          # worker play format (before the frozen copy)
    c.sft.play_lr = 5e-5
    c.sft.play_batch_size = 32
    c.sft.play_max_len = 2048
    c.sft.n_tasks = 0              # every valid_train game that is neither evidence nor anchor
    c.sft.steps = 36               # editor edit format on the rule teacher's transcripts
    c.sft.episodes = 6
    c.sft.batch_size = 8
    c.sft.lr = 5e-5
    c.sft.max_len = 4096
    c.sft.rule_level = "type"
    c.sft.noop_examples = False
    c.train.lr = 1e-5             # campaign 2 lever (docstring); campaign 1: 5e-6
    c.rl.mini_batches = 4
    c.train.schedule = "constant"
    c.train.total_steps = 400
    c.train.micro_batch = 8
    c.train.length_buckets = (1024, 2048, 3072, 4096, 6144, 8192)
    return c
