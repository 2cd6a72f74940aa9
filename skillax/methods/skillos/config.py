"""SkillOS configuration preset at paper values (DESIGN.md §1.2); ``configs/skillos_*.py`` shrink it.

Sizes: ``groups_per_step`` task groups per step (paper batch 32), ``group_size`` rollouts per
group (paper N = 8), ``tasks_per_group`` tasks per group (|G|). The trainer reads
``train``/``rl`` (:mod:`skillax.config_defaults`); ``rl.temperature`` is set equal to the
curator's rollout ``temperature`` (PITFALLS 6); ``rl.eps_high = rl.eps_low = 0.2``: the paper's
clip(rho, 1 - eps, 1 + eps) is symmetric (engages only with ``rl.mini_batches`` > 1).

``max_train_minutes`` > 0: RL stops after the step whose end passes that wall-clock budget
(measured from the start of RL), with a checkpoint, then evaluates and exports; a re-run
resumes (as Skill1's).

``sft.play_steps`` > 0 (ours, not the paper's; off at paper settings): play-format SFT of the
*executor* on planner/walkthrough transcripts of ``sft.play_tasks`` train games (spread over
task types, 0 = all; :mod:`~skillax.methods.skillos.executor_sft`) before the frozen copy is
taken, so curator and executor both start from it; the frozen executor is saved in the
workdir (``frozen/executor``), so a resume reloads it instead of re-running the SFT. The
paper's executors are Qwen3-8B/32B; a 135M executor without it emits ~98 % invalid actions
(issue 6), every r_task is 0 and the curator has nothing to learn from.
``sft.play_skill_fraction`` (ours; 0 = off): that share of the play episodes is shown with
skills in context (``sft.play_relevant_share`` of them with the rule teacher's skill for the
episode's task type written from *other* games, plus skills of other types; the rest with
other types' skills only), so the executor learns to use and to ignore injected skills.
``sft.play_families`` (ours; "" = every task type): comma-separated task types (ALFWorld's
``pick_and_place_simple``, ...) whose train games alone are the play transcripts. A reader
SFT'd on some types only has procedures it was never shown (the others): the controlled
upper-bound experiment of issue 18 (does a skill in context teach a reader a procedure it
does not know?). Unknown names raise ValueError.
``sft.play_search`` (ours; ALFWorld only): the play transcripts come from the *searching*
expert (:mod:`skillax.agents.envs.search_expert`) instead of the planner: it looks for the
object receptacle by receptacle, in the places the episode's own-type skill names first when
that skill is in context, else in a fixed default order. The planner's actions do not depend
on the skills in context, so its demonstrations teach a reader to ignore them (campaign 4);
these teach it to follow a skill's places (campaign 5, issue 18).
``sft.play_contrast`` (ours; needs ``play_search``): every play game three times -- with its
own type's skill among others', with other types' skills only, and with none
(:func:`skillax.methods.skillos.executor_sft.contrast_skills`) -- instead of one context drawn
with ``play_skill_fraction`` / ``play_relevant_share`` (then unused): counterfactual pairs for
every game, where one draw left a type with a handful of own-skill episodes (campaign 6).

Warm start shared by the arms (``warmstart``, BRIEF contract): ``save_dir`` saves the frozen
executor (after its play SFT) and the curator (after its SFT); ``load_dir`` skips both SFT
stages and starts from them; a checkpoint in the workdir (resume) wins over both.

Rewards: r = r_task + λ_f r_fc + λ_u r_cnt + λ_c r_comp with ``reward.{fc, cnt, comp}``.
``reward.fc_no_calls`` (1.0; 0.0 = the switch) is r_fc of a rollout that made no call
(``rewards`` module docstring; issue 19 item 5). r_cnt needs a content judge
(``judge.kind`` openai | policy; an endpoint is ``judge.openai.*`` and the executor's
``executor.openai.*`` with ``executor.kind = "openai"``: the one spelling of endpoints across
methods, ``config_defaults.openai_endpoint``, which says why): with ``reward.cnt`` > 0 and no judge the run refuses to
start (:func:`check_settings`); ``reward.cnt = 0`` is the paper's ablation.

Repo budget (ours, issue 22; off at paper settings): ``rollout.repo_token_budget`` = B > 0
tokens each rollout's repo may hold (SKILL.md texts under the curator tokenizer, the |S| of
r_comp); an insert_skill / update_skill call that would push the repo over B fails as an
invalid call (the repo unchanged, lowering r_fc; ``skills.repo.SkillRepo``); metrics
``repo_tokens`` (mean over rollouts) and ``calls_over_budget``. 0 = off (the paper: the repo is
bounded only by r_comp's pressure).

Ablations of the SkillOS paper (its ablation table; labelled by :func:`ablation_labels` in
metrics.jsonl and eval.json):
- "w/o r_cnt"     ``reward.cnt = 0`` (no judge is built or called)
- "w/o r_comp"    ``reward.comp = 0``
- "w/o grouping"  ``grouping = "random"`` (seeded random task groups mixing task types)

Evaluation (``eval``; :mod:`~skillax.methods.skillos.evaluate`): every split of
``eval.splits`` ("a,b"; default ``env.eval_split``), ``eval.n_groups`` groups per split
(0 = groups covering every game, grouped as in training), conditions ``eval.conditions``
("" = no_memory + curated, + handwritten when ``eval.handwritten_dir`` is set; "none" = no
evaluation; "auto" = "" except curated alone in an arm that loads a shared warm start),
``eval.batch_size`` concurrent episodes (0 = all at once).

Play throughput (issue 17): ``env.workers`` game processes (0 = in-process, N, -1 = the cores
this process may use minus one, ``agents.envs.runner.resolve_workers``); ``executor.overlap``
1 = lock-step play (default: on a GPU an ALFWorld turn is cheaper than a policy call's fixed
cost) | K >= 2 = overlapped | -1 = "auto" (``agents.agent_loop.play_episodes``). The local
executor samples each turn with per-(turn, episode) keys, so overlap does not change the
episodes. ``init_skills`` (``config_defaults.base``): the repo every rollout starts from.
"""
from __future__ import annotations

import ml_collections

from skillax import config_defaults


EXECUTOR_KINDS = ("policy", "openai")          # executor.kind (train.make_executor)
JUDGE_KINDS = ("off", "openai", "policy")      # judge.kind (train.make_judge)
SFT_TEACHERS = ("rules", "worker")             # sft.teacher (train.sft_warm_start)


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
        temperature=0.4, action_tokens=256, self_judge="executor", judge_tokens=8, overlap=1,
        openai=config_defaults.openai_endpoint(max_concurrency=8, max_retries=2, timeout_s=60.0)))
    c.judge = ml_collections.ConfigDict(dict(
        kind="off",                 # "off" (r_cnt = 0, logged "off") | "openai" | "policy"
        max_retries=2, scale=10, max_tokens=256,   # max_retries: re-asks after an unparsable grade
        openai=config_defaults.openai_endpoint(max_concurrency=8, max_retries=2, timeout_s=120.0)))
    c.rollout = ml_collections.ConfigDict(dict(
        top_k=3, retrieval_fields="name,description,body", curator_tokens=1024, curator_prefix="",
        max_prompt_tokens=6144, evidence_steps=8, evidence_chars=3000, max_skill_chars=1500,
        repo_token_budget=0))
    c.play = ml_collections.ConfigDict(dict(
        history_k=2, max_admissible=40, max_obs_chars=600, max_skill_chars=800, max_skills=3,
        require_think=True, invalid_penalty=0.1, max_action_chars=200))
    c.reward = ml_collections.ConfigDict(dict(fc=1.0, cnt=0.1, comp=0.05, fc_no_calls=1.0))
    c.rl = config_defaults.rl()
    c.rl.eps_high = 0.2             # the paper's clip(rho, 1 - eps, 1 + eps) is symmetric
    c.train = config_defaults.train(lr=1e-6, total_steps=100)
    c.sft = config_defaults.sft()
    c.sft.max_len = 7168            # curator prompt (<= rollout.max_prompt_tokens) + tool calls
    c.sft.teacher = "rules"         # "rules" (expert trajectories) | "worker" (executor endpoint as teacher)
    c.sft.groups_per_stream = 2
    c.sft.unused_after = 4
    c.sft.play_steps = 0            # executor play-format SFT (module docstring); 0 = off
    c.sft.play_lr = 5e-5
    c.sft.play_tasks = 32           # train games whose expert replays are the play transcripts (0 = all)
    c.sft.play_max_len = 1024       # play transcript row length (prompt + one action)
    c.sft.play_skill_fraction = 0.0     # share of play episodes with skills in context (0 = off)
    c.sft.play_relevant_share = 0.5     # of those: with the episode's own task-type skill
    c.sft.play_skill_games = 3          # other games each task-type skill is written from
    c.sft.play_search = False           # ALFWorld: demonstrations of the searching expert (docstring)
    c.sft.play_contrast = False         # play_search: each game with own+other / other / no skills (docstring)
    c.sft.play_families = ""            # task types of the play games, comma-separated ("" = all)
    c.eval = ml_collections.ConfigDict(dict(
        n_groups=0, temperature=0.4, every=0, splits="", conditions="", handwritten_dir="", batch_size=0,
        keep_actions=False))   # keep_actions: no_memory / handwritten records keep the executor's actions
    return c


def check_settings(cfg) -> None:
    """Refuse settings that would silently be an ablation: r_cnt weighted without a judge
    (issue 19 item 6). Raises ValueError naming the fix."""
    if float(cfg.reward.cnt) > 0 and str(cfg.judge.kind) == "off":
        raise ValueError(f"reward.cnt={cfg.reward.cnt} needs a content judge for r_cnt: set judge.kind to "
                         f"'openai' (the paper: Qwen3-32B) or 'policy' (the frozen local policy), or "
                         f"reward.cnt=0 for the paper's 'w/o r_cnt' ablation")
    if not 0.0 <= float(cfg.reward.get("fc_no_calls", 1.0)) <= 1.0:
        raise ValueError(f"reward.fc_no_calls must be in [0, 1], got {cfg.reward.fc_no_calls}")


def ablation_labels(cfg) -> list[str]:
    """The paper's ablation rows this configuration runs (module docstring), e.g. ``["w/o r_cnt"]``."""
    out = []
    if float(cfg.reward.cnt) == 0 or str(cfg.judge.kind) == "off":
        out.append("w/o r_cnt")
    if float(cfg.reward.comp) == 0:
        out.append("w/o r_comp")
    if str(cfg.grouping) == "random":
        out.append("w/o grouping")
    return out
