"""Skill-alpha config defaults at the paper's settings (DESIGN.md §1.1); configs/ shrink them.

Keys (``configs/skill_alpha_*.py`` override):

* ``setting``: "experience" | "document" | "reasoning". ``stage``: "train" (RL, then infer
  + eval), "infer" (edit the stream with the current / restored editor, write z_T, eval),
  "sft_data" (write SFT transcripts and stop).
* ``steps``: RL steps; ``lanes``: units per step (independent skills editing the stream from
  staggered offsets; the paper's batch of 8 units); ``checkpoint_every``;
  ``max_train_minutes`` (0 = off): stop RL with a checkpoint after the step that passes this
  wall-clock budget (measured from the start of RL), then infer + evaluate; a re-run resumes.
* ``unit``: G (``group_size``, paper 8), ``anchors_k`` (paper 1), ``graded`` (off), ``carry``
  ("best" | "first" | "keep"), ``max_new_tokens`` (editor response), ``dedupe``,
  ``zero_variance`` ("keep" | "drop"), ``prefill`` (text after the assistant header; "" =
  the editor opens its own ``<think>``; see ``prompts``), ``actions`` (the action space,
  default all five; ``action_space``), ``reward`` ("rollback" paper | "own_score").
* ``evidence``: units_per_chunk 4, max_steps 8, max_traj_chars 3000, max_prompt_tokens 8192,
  ``order`` ("round_robin" | "grouped"), ``n_evidence_per_family`` / ``n_anchor_per_family``,
  ``source`` ("worker" paper | "worker+expert" | "expert"), ``sequence`` ("source" |
  "shuffled" | "reverse"; ``evidence_stream``).
* ``worker``: ``kind`` "frozen" (a frozen copy of the initial editor weights, sampled by the
  engine's sampler) | "openai" (``openai.*``: the endpoint section every method spells the
  same way, ``config_defaults.openai_endpoint``); ``temperature`` (0 = greedy: the rollback
  comparison then differs only by the skill), ``max_tokens`` (answers) / ``action_tokens``
  (game turns).
* ``judge``: ``kind`` "worker" (the frozen worker grades) | "openai" (``judge.openai.*``);
  ``max_retries`` (re-asks after an unparsable grade; the endpoint's HTTP retries are
  ``judge.openai.max_retries``).
* ``env`` (experience): name "auto" | "alfworld" | "textworld", splits, step cap, processes
  (``workers``: 0 = in-process, N, -1 = the cores this process may use minus one,
  ``agents.envs.runner.resolve_workers``), ``families`` (keep only these task families; empty
  = all). ``play.overlap``: the worker's game play, 1 = lock-step (default; on a GPU a game
  turn is cheaper than a sampler call's fixed cost) | K >= 2 = overlapped | -1 = "auto"; the
  frozen worker samples each turn with per-(turn, episode) keys, so the episodes are the same.
* ``reasoning``: reasoning-gym datasets, items per dataset; ``document``: path / questions.
* ``skill``: name, description, initial rules of z_0; ``token_budget`` (ours, issue 22; 0 = off
  = the paper, where z is bounded only by the editor's own MERGE/PRUNE): B > 0 tokens z may hold
  (its rendered rule body, what the worker reads, under the policy tokenizer); an edit that
  would push z over B is invalid like a parse failure (z unchanged, reward of an invalid edit,
  no worker call; ``action_space.restrict_budget``), in RL and in inference. Metrics
  ``skill_tokens`` (mean over units of the carried z_t) and ``budget_rejections``. ``init_skills`` (``config_defaults.base``,
  issue 22): z_0 from a folder of SKILL.md folders instead (``setting.initial_skill``; with
  several skills ``skill.name`` picks one, else all their rules are merged into one skill).
* ``infer``: temperature; ``eval`` (``evaluate``): ``n_tasks`` per split (0 = every game),
  ``splits`` (tuple or "a,b"; default ``env.eval_split``), ``conditions`` (subset of
  "no_skill,with_skill,handwritten"; default all that apply), ``batch_size`` (episodes per
  lock-step chunk; 0 = all at once), ``handwritten_dir`` (folder of SKILL.md files whose
  numbered steps become the rules of z_hand; "" = no ``handwritten`` condition), ``repeats``
  (document / reasoning only).
* ``sft``: editor warm start (``steps`` > 0: SFT on teacher edit transcripts, ``teacher``
  "rule" | "openai", ``episodes`` passes over the stream, lr 5e-6, warmup 0.05, cosine) and
  ``play_steps`` > 0: play-format SFT on expert demonstrations *before* the worker copy is
  taken (experience setting; a 135M worker cannot follow the play format without it), rows of
  ``play_max_len`` tokens (one game turn each), ``play_batch_size`` rows per step (0 =
  ``batch_size``), on ``n_tasks`` training games (0 = all) that are neither evidence nor
  anchor games (a worker that memorised an anchored game wins it whatever the skill says).
  ``noop_examples`` / ``rule_level``: the rule teacher's NOOP-when-covered rule and rule
  level (``sft_data``). The worker's frozen weights are kept in the workdir, so a resume
  never re-runs the play SFT.
  ``play_search`` (ours, default False = the paper-free planner replay with no skill in
  context; ALFWorld only): the play transcripts come from the *searching* expert, and
  ``play_skill_fraction`` of the episodes carry a rule document rendered as the worker sees z
  at evaluation, made of the rule teacher's type skills of every task type (each from
  ``play_skill_games`` other train games); the expert searches the places of the episode's
  own-type rules first (:mod:`skillax.methods.skill_alpha.play_search`). ``play_contrast``
  (ours; needs ``play_search``): every game three times instead -- with the full document,
  with it less its own type's rules, with none (``play_search.contrast_documents``).
* ``warmstart`` (shared, ``methods.common.warmstart``): ``save_dir`` saves the editor after
  its SFT + the frozen worker + ``evidence_stream.json``; ``load_dir`` starts from them and
  skips both SFT stages (the arms of an experiment edit the same stream with the same worker).
* ``rl``, ``train``: shared (``config_defaults``); paper lr 5e-7, temperature 1.0, entropy
  0.001, KL off.
"""
from __future__ import annotations

import ml_collections

from skillax import config_defaults

D = ml_collections.ConfigDict


def skill_alpha(setting: str = "experience") -> ml_collections.ConfigDict:
    c = config_defaults.base("skill_alpha")
    c.setting = setting
    c.stage = "train"
    c.steps = 100
    c.lanes = 8
    c.checkpoint_every = 10
    c.keep_checkpoints = 2
    c.max_train_minutes = 0.0                          # > 0: wall-clock cap on RL (docstring)
    c.unit = D(dict(group_size=8, anchors_k=1, graded=False, carry="best", max_new_tokens=1024,
                    dedupe=True, zero_variance="keep", prefill="", actions="CREATE,UPDATE,MERGE,PRUNE,NOOP",
                    reward="rollback"))
    c.evidence = D(dict(units_per_chunk=4, max_steps=8, max_traj_chars=3000, max_paragraph_chars=3000,
                        max_prompt_tokens=8192, order="round_robin", n_evidence_per_family=8,
                        n_anchor_per_family=16, source="worker", sequence="source"))
    c.worker = D(dict(kind="frozen", temperature=0.0, max_tokens=512, action_tokens=64,
                      openai=config_defaults.openai_endpoint(max_concurrency=16)))
    c.judge = D(dict(kind="worker", max_retries=2, max_tokens=512,
                     openai=config_defaults.openai_endpoint(max_concurrency=16)))
    c.env = D(dict(name="auto", train_split="valid_train", eval_split="valid_unseen", max_steps=30, workers=0,
                   tw_games_per_family=8, data_dir="", families=()))
    c.play = D(dict(history_k=2, max_admissible=40, max_obs_chars=600, max_skill_chars=6000, overlap=1))
    c.reasoning = D(dict(datasets=("basic_arithmetic", "chain_sum", "gcd", "lcm", "letter_counting",
                                   "number_sorting"), n_per_dataset=24, eval_per_dataset=8))
    c.document = D(dict(path="", questions=""))
    c.skill = D(dict(name="", description="", initial_rules=(), token_budget=0))
    c.infer = D(dict(temperature=0.0, enabled=True))
    c.eval = D(dict(n_tasks=64, repeats=1, splits="", conditions="", batch_size=0, handwritten_dir=""))
    c.sft = config_defaults.sft(steps=0, lr=5e-6)       # paper: 3 epochs, lr 5e-6, warmup 0.05, cosine
    c.sft.max_len = 8192
    c.sft.teacher = "rule"                               # "rule" (experts) | "openai"
    c.sft.episodes = 3
    c.sft.temperature = 0.7
    c.sft.max_tokens = 1024
    c.sft.openai = config_defaults.openai_endpoint(max_concurrency=4)
    c.sft.play_steps = 0                                 # play-format SFT of the worker (experience)
    c.sft.play_lr = 5e-5
    c.sft.play_max_len = 2048                            # play rows (one game turn); 0 = sft.max_len
    c.sft.play_batch_size = 0                            # 0 = sft.batch_size
    c.sft.play_search = False                            # ALFWorld: searching expert + rule document (docstring)
    c.sft.play_skill_fraction = 0.0                      # play_search: share of episodes with the document
    c.sft.play_skill_games = 3                           # play_search: other games each type's rules come from
    c.sft.play_contrast = False                          # play_search: each game with full / others' / no document
    c.sft.noop_examples = False                          # rule teacher: NOOP when the rule covers the chunk
    c.sft.rule_level = "instance"                        # rule teacher: "instance" | "type" plans
    c.rl = config_defaults.rl()
    c.rl.temperature = 1.0
    c.rl.entropy_coef = 0.001
    c.rl.kl_coef = 0.0
    c.rl.eps_high = 0.2
    c.train = config_defaults.train(lr=5e-7, total_steps=100)
    return c


DEFAULT_SKILL = {
    "experience": ("household-tasks", "Rules for solving text-game household tasks, learned from trajectories."),
    "document": ("game-docs", "Rules distilled from the game documentation for answering questions about it."),
    "reasoning": ("reasoning-tips", "Rules for solving short reasoning problems, learned from solved and failed traces."),
}
