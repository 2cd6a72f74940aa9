"""Building blocks shared by ``configs/*.py`` (each config file stays a small ``get_config``)."""

from __future__ import annotations

import ml_collections


def model(path: str = "smollm2") -> ml_collections.ConfigDict:
    """Policy model settings.

    path: an HF checkpoint folder (Qwen3 / Qwen2 / Llama safetensors), ``smollm2`` (the embedded
      SmolLM2-135M-Instruct GGUF), ``qwen2.5-coder-0.5b`` (the embedded Qwen2.5-Coder-0.5B-Instruct
      GGUF, Qwen vocabulary), or ``random:<shape>`` (qwen3-0.6b | qwen3-1.7b | qwen3-8b).
    dtype: compute dtype ("auto" = bfloat16 on accelerators, float32 on CPU... see resolve).
    param_dtype: storage dtype of the parameters held by the trainer/sampler.
    max_len: KV-cache length (prompt + generated tokens) of the sampler; at most the
      checkpoint's max_position_embeddings (checked before a mode loads the model).
    share_prefill: the sampler prefills each distinct prompt of a call once (G samples share
      its K/V; exact, ``engine.sampler.Sampler``); false = one prefill per row.
    cache_attention: "auto" (Pallas kernel on one GPU, XLA elsewhere) | "pallas" | "xla".
    sampler_memory_gb: device memory (GiB) one sampler call may take beyond the weights: its KV
      cache + working set as ``engine.sampler.Sampler.call_bytes`` predicts them. A call
      predicted above it runs as several calls over row chunks (same tokens and logprobs:
      rows keep their keys), so processes sharing a GPU make more calls instead of running
      out of memory. 0 = off (one call, however large; the default).
    sampler_xla: XLA compiler options of the sampling programs only, "name=value,..."
      (``engine.sampler.parse_compiler_options``), e.g. "xla_gpu_enable_triton_gemm=false".
      "" = XLA's defaults (measured best for SmolLM2 on the H200: autotune level 0 builds
      faster but samples 2.5x slower, ``benchmarks/results/rl_loop.md``).
    batch_buckets: row sizes the sampler pads a call to (``engine.buckets.batch_buckets``):
      "auto" (8, 16, 32, 64, 96, ... on GPU/TPU -- fewer programs built after warm-up; the fine
      1, 2, 3, 4, 6, ... on CPU, where a padded row costs compute) | "coarse" | "fine" | "8,32,...".
    batch_floor: fewest rows a coarse call pads to (``engine.buckets.batch_buckets``; 0 = off, the
      default). Skill1 ties it to tasks_per_step x group_size (a training step's episodes), so
      play never builds programs for the 16- and 8-row tails of a step after warm-up. Padded
      rows are prefilled too: measured faster only with SmolLM2 (1.16x, H100,
      ``benchmarks/results/rl_loop.md``); for a large policy, whose prefill is compute-bound, a
      tail turn of a few live episodes then prefills the whole floor (unmeasured: compare
      ``--config.model.batch_floor=0``). A budget-split call's parts ignore it
      (model.sampler_memory_gb).
    prefill_floor: with batch_floor, the one shared-prefill row count below it
      (``engine.buckets.prefill_buckets``; 0 = off, the default). Skill1 ties it to
      tasks_per_step: a step's prompts prefill once for their G samples; other counts of
      distinct prompts are not shared (no late programs for them).
    prompt_buckets: prefill-chunk lengths the sampler pads a prompt to
      (``engine.buckets.prompt_buckets``): "fine" (16, 24, 32, 48, ...; the default) | "coarse"
      (powers of two: fewer programs built as agent histories grow, up to 2x prefill padding)
      | "512,1024,...".
    precompile: build the sampling programs a method's RL step can reach before step 0
      (``engine.precompile``; Skill1: ``methods.skill1.precompile.stage_calls``), so no call builds
      one late in a timed step (8-15 s each on the H200, ``benchmarks/results/rl_loop.md``):
      "false" (the default) | "true" | "auto" (on GPU / TPU, off on CPU). Same samples either way;
      metrics ``compile/precompiled`` (programs built), ``compile/precompile_s`` (seconds) on
      the first RL step of a run. Off by default (2026-12-07): the predicted prompt-length range
      is loose (an empty play prompt, 79 Qwen tokens, to every capped field filled, 1,334), so
      ``configs/skill1_alfworld_learning.py`` on Qwen2.5-Coder-0.5B with the GPU row buckets
      ("auto") predicts 51 programs for the full arm (18 for GRPO) where campaigns built ~10
      (play chunks 384 / 512 / 768), ~2.3 min at ~2.7 s each against the ~40 s of late builds
      it saves; not yet run on a GPU.
    precompile_max_programs: the most predicted programs ``precompile`` builds (64); more
      raise ValueError before anything is built (``PolicyEngine.precompile_sampler``).
    """
    c = ml_collections.ConfigDict()
    c.path = path
    c.dtype = "auto"
    c.param_dtype = "float32"
    c.max_len = 2048
    c.share_prefill = True
    c.cache_attention = "auto"
    c.sampler_memory_gb = 0.0
    c.sampler_xla = ""
    c.batch_buckets = "auto"
    c.batch_floor = 0
    c.prefill_floor = 0
    c.prompt_buckets = "fine"
    c.precompile = "false"   # a string, so "auto" / "true" parse from the command line
    c.precompile_max_programs = 64
    return c


def mesh() -> ml_collections.ConfigDict:
    """Device mesh of the method engines (``methods.common.engine.engine_mesh``).

    shape: (data, fsdp, tensor) sizes; -1 fills with the remaining devices.
    enabled: "auto" = shard when there is more than one accelerator device (fake CPU devices
      stay single-device), "true" = always (also CPU fake meshes), "false" = never.
    On a mesh ``train.micro_batch`` (and the SFT batch) must be a multiple of data x fsdp;
    batches are placed with ``rl.train_step.shard_batch`` (several processes: each passes its own
    rows, the global batch spans every process; ``skillax.distributed``).
    """
    c = ml_collections.ConfigDict()
    c.shape = (1, -1, 1)
    c.enabled = "auto"
    return c


def base(mode: str) -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.mode = mode
    c.seed = 0
    c.distributed = distributed()
    c.model = model()
    c.mesh = mesh()
    c.warmstart = warmstart()
    # absolute RL deadline (time.time() seconds; 0 = off), methods.common.clock: processes that
    # share one machine lease stop RL in time to finish their evaluations
    c.train_until_unix = 0.0
    c.train_until_file = ""        # a file whose number overrides train_until_unix when present
    # start from skills you already have (issue 22): a folder of Agent Skills folders
    # (<dir>/<name>/SKILL.md; skills.importing). "" = the paper's start: an empty Skill1 library,
    # empty SkillOS repos, Skill-alpha's z_0 from config.skill. Set: the Skill1 library is seeded
    # when a run does not resume, every SkillOS rollout's repo starts with these skills, and
    # Skill-alpha's z_0 is the one skill (or skill.name of them, or all of them merged).
    c.init_skills = ""
    # resuming a workdir whose checkpoints came from a config that differs in a key that changes
    # the run's meaning (model, objective, seeds, ...) is refused (methods.common.run_dir);
    # True resumes anyway (recorded in <workdir>/resumes.jsonl)
    c.allow_config_change = False
    # absl / library log level: "warning" (default: warnings and skillax's own lines; orbax's
    # INFO lines hidden) | "info" | "debug" | "error". absl's --verbosity, when given, wins.
    c.log_level = "warning"
    # JAX's persistent compilation cache (skillax.compile_cache): "auto" = $SKILLAX_COMPILATION_CACHE,
    # else JAX's own folder ($JAX_COMPILATION_CACHE_DIR), else ~/.cache/skillax/jax on GPU/TPU and
    # off on CPU | "off" | a folder. Built sampler and
    # train-step programs are read back instead of rebuilt: after a resume, in later runs, and by
    # every process that shares the folder (the arms of one GPU lease).
    c.compilation_cache = "auto"
    return c


def distributed() -> ml_collections.ConfigDict:
    """Multi-process runs on JAX's multi-controller runtime (``skillax.distributed``, issue 21).

    enabled: "auto" (default: on when a launcher is detected -- a multi-host TPU slice, Slurm /
      Open MPI with several tasks, ``JAX_COORDINATOR_ADDRESS`` -- or coordinator_address is
      set) | "true" | "false" (one process, today's behaviour exactly: JAX is not asked).
    coordinator_address: "host:port" of process 0 ("" = JAX_COORDINATOR_ADDRESS / detected).
    num_processes: processes of the run (0 = detected). process_id: this process (-1 =
      detected; set per process, left out of the cross-process config check).
    local_device_ids: "0,1" = the local GPUs this process drives ("" = all / detected; per
      process). timeout_s: bound on reaching the coordinator, on JAX's start-up and shutdown,
      and on noticing a process that died (JAX's heartbeat; a closed connection is noticed at
      once): the others then exit with status 3 and a one-line DistributedError.
    cpu_collectives: cross-process collectives on CPU ("gloo" | "mpi").
    Start-up fails on every process, before any training, for an unreachable coordinator,
    configs that differ between processes, or a mesh whose data x fsdp the process count does
    not divide. Modes other than skill1, skillos (and info) raise NotImplementedError with more
    than one process for now (skill_alpha among them); a SkillOS warm start (save / load) too.
    """
    return ml_collections.ConfigDict(dict(enabled="auto", coordinator_address="", num_processes=0,
                                          process_id=-1, local_device_ids="", timeout_s=60.0,
                                          cpu_collectives="gloo"))


def openai_endpoint(max_concurrency: int = 8, max_retries: int = 5, timeout_s: float = 60.0) -> ml_collections.ConfigDict:
    """An OpenAI-compatible endpoint (``agents.workers.openai_compat``), the one spelling every
    method uses for every role that can be served by one: ``<role>.openai.*`` with
    ``<role>.kind = "openai"`` (SkillOS ``executor`` / ``judge``; Skill-alpha ``worker`` /
    ``judge`` / ``sft`` = the teacher). Nested, not flat beside the role's own keys: ``model``
    here is the served model's name, which flat would read as the policy (``model.path``), and
    the role's own ``max_tokens`` / ``max_retries`` (re-asks) / ``temperature`` stay apart from the
    transport's. (Issue 23 item 7; the flat SkillOS spelling ``executor.base_url`` is refused
    with the new key named: ``config_keys.RENAMED``.)

    model: the model name sent with each request (e.g. "gpt-4o", or the name vLLM serves).
    base_url: endpoint root including ``/v1``; "" = the OpenAI API.
    api_key_env: the environment variable that holds the key (never the key itself).
    max_concurrency: requests in flight at once.
    max_retries: HTTP attempts after the first (429 / 5xx / timeouts).
    timeout_s: per-attempt request timeout in seconds.
    cache_path: sqlite completion cache ("" = none).
    """
    return ml_collections.ConfigDict(dict(model="", base_url="", api_key_env="OPENAI_API_KEY",
                                          max_concurrency=max_concurrency, max_retries=max_retries,
                                          timeout_s=timeout_s, cache_path=""))


def warmstart() -> ml_collections.ConfigDict:
    """Shared warm start of an experiment's arms (``methods.common.warmstart``).

    save_dir: write the state after the SFT stages here. load_dir: start from a saved warm
    start instead of running the SFT stages. wait_s: wait this long for load_dir to complete.
    in_workdir: without save_dir, save the SFT result in ``<workdir>/warmstart/`` so a run that
    dies before its first RL checkpoint and is started again skips its SFT (ours; the papers
    are silent; False saves disk: one fp32 copy of the policy plus the frozen copies).
    """
    return ml_collections.ConfigDict(dict(save_dir="", load_dir="", wait_s=0.0, in_workdir=True))


def train(lr: float = 1e-6, total_steps: int = 100) -> ml_collections.ConfigDict:
    """Optimiser and train-step knobs (``methods.common.engine.EngineConfig``).

    schedule: "constant" (default: the papers' RL learning rates are one stated constant rate;
      Skill-alpha 5e-7, SkillOS 1e-6, Skill1 1e-6) | "cosine" (decay to 0 at total_steps, opt-in).
    micro_batch: rows per micro-batch (gradient accumulation over the rest of the batch).
    length_buckets: padded sequence lengths (one compiled train step per bucket).
    update_layout: "buckets" (default: an update whose rows span several length buckets runs
      as length-bucketed micro-batches, each padded to its own bucket, gradients accumulated:
      the padded update's gradient up to fp32 summation order at a cost that follows the
      rows' lengths) | "padded" (every row of an update padded to its longest row's bucket).
      ``skillax.rl.minibatch``.
    """
    c = ml_collections.ConfigDict()
    c.lr = lr
    c.total_steps = total_steps
    c.warmup_ratio = 0.0
    c.schedule = "constant"
    c.clip_norm = 1.0
    c.weight_decay = 0.0
    c.micro_batch = 8
    c.remat = True
    c.logprob_chunk = 256
    c.length_buckets = (256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
    c.update_layout = "buckets"
    return c


def rl() -> ml_collections.ConfigDict:
    """Policy-gradient knobs shared by the methods (``rl.objectives.ObjectiveConfig``).

    temperature: the policy's sampling temperature; the trainer scores the same
      temperature (PITFALLS 6) -- methods set it equal to their rollout temperature.
    mini_batches: k optimiser updates per rollout batch, each on 1/k of its episodes (verl's
      ppo_mini_batch_size); epochs: passes over the rollout batch (verl's ppo_epochs). Old
      logprobs stay the sampler's and advantages the batch's, so updates after the first are
      off-policy and the PPO clip engages (``skillax.rl.minibatch``). 1 and 1 (default): one
      update per rollout batch (ratio 1 at the update; the papers do not state theirs).
    kl_objectives (Skill1, objective "paper"; ours): comma list of the objectives whose loss carries
      the ``kl_coef`` term, "util" (default) or e.g. "util,distil": with the KL on play only the
      distil JSON format eroded under RL in 3 of 6 full arms of campaigns 9-11 (parse rate per
      half of the run 0.73 / 0.48, 0.81 / 0.33, 0.89 / 0.74).
    skip_no_signal (ours; True): a batch with every advantage 0 under its masks and no KL runs
      no optimiser update (its entropy-only gradient becomes a full Adam step;
      ``PolicyEngine.train``); False = verl / TRL (the step runs).
    objective_grad_norms_every (ours; 0 = off): a diagnostic -- on RL step 0 and every N-th
      step after (N = the value; counted from the process start), each update also logs the
      gradient norm (before clipping) of each objective's term lambda_k J_k of the loss alone,
      ``grad_norm_<objective>`` (Skill1: ``grad_norm_util``, ``grad_norm_rerank``,
      ``grad_norm_distil``; 0.0 for an objective without tokens; the mean over the step's
      updates, like ``grad_norm``). Each logged step costs about one more forward + backward
      over the update's rows (each row once per objective it trains;
      ``PolicyEngine._objective_grad_norms``: ~2x the update time); N = 5 costs ~1/5 of that.
      The applied update is the same, bit for bit.
    """
    c = ml_collections.ConfigDict()
    c.temperature = 1.0
    c.eps_low = 0.2
    c.eps_high = 0.28
    c.entropy_coef = 0.001
    c.kl_coef = 0.0
    c.kl_estimator = "k3"
    c.mini_batches = 1
    c.epochs = 1
    c.skip_no_signal = True   # no update on a batch whose every advantage is 0 and no KL (PolicyEngine.train)
    c.objective_grad_norms_every = 0   # diagnostic: log grad_norm_<objective> every N-th RL step (0 = off)
    c.aggregation = "token_mean"
    c.drop_truncated = False
    c.lambda_rerank = 0.3
    c.lambda_distil = 0.3
    c.kl_objectives = "util"   # Skill1 (objective "paper"): which objectives carry kl_coef, e.g. "util,distil"
    return c


def sft(steps: int = 0, lr: float = 5e-6) -> ml_collections.ConfigDict:
    """SFT warm start (paper: 3 epochs, lr 5e-6, warmup 0.05, cosine)."""
    c = ml_collections.ConfigDict()
    c.steps = steps
    c.lr = lr
    c.warmup_ratio = 0.05
    c.batch_size = 8
    c.max_len = 1024
    c.n_tasks = 16
    return c


SKILL1_ABLATIONS = ("none", "no_selection", "no_distillation", "no_library")


def skill1(env_name: str = "auto") -> ml_collections.ConfigDict:
    """Skill1 settings at paper values (DESIGN.md §1.3); configs shrink them for CPU.

    Paper-default behaviour, with the alternative as a named switch (issue 19):
      rl.distil_parse_fail  "zero" (R_distill = 0 when the distil JSON does not parse; the
                            released code's rule) | "floor" (-1, ours: a failure never outranks a
                            parsed distil; campaign 14) | "raw" (r - max U regardless).
      rl.rerank_baseline    "none" (REINFORCE on the raw NDCG, the paper) | "batch_mean" (ours:
                            minus the step's mean NDCG over reranked episodes; campaign 14 saw
                            the raw reward collapse the rerank without raising NDCG).
      rl.util_weighting     "token" (the util loss is a token mean over every play turn of the
                            step, verl's default) | "trajectory" (ours, objective "paper" only:
                            each episode counts once, GRPO's 1/|o_i| with the episode as o_i;
                            campaign 17 measured the token mean's pull toward long lost episodes;
                            methods.skill1.objectives.trajectory_token_weights).
      library.count_mode    "selected" (n(s) counts selections as top-1: the paper's n(s),
                            used by eviction) | "retrieved" (all K candidates). The EMA on U
                            always updates all K retrieved (paper).
      library.token_budget  0 (off: the paper's library, bounded by capacity only) | B > 0 tokens
                            for the whole library (ours, issue 22): after each admission records
                            are evicted by the eviction score (U * log2(n + 1) by default) until
                            the library's size is <= B; a skill that alone exceeds B is not
                            admitted. Size = tokens of each record's play-prompt skill text
                            (methods.skill1.prompts.skill_text) under the policy tokenizer
                            (skills.library, skills.budget); metrics library_tokens,
                            budget_evictions, budget_rejections.
      rollout.distil_prompt_chars  character budget of the whole-trajectory view in the distil
                            prompt (middle steps elided beyond it; paper: the whole trajectory).
      objective             "paper" | "released_code" (methods.skill1.objectives cites each term).
    Ablations (Skill1 paper, ablation table rows):
      ablation="no_selection"     row "w/o Select.": no query, no rerank; the task text is the
                                  query and the top-1 by cosine conditions play.
      ablation="no_distillation"  row "w/o Distill.": no reflection/distil generation; a won
                                  episode's raw action sequence is stored as the skill (the
                                  paper's library then fills with raw trajectories); EMA and
                                  retrieval as usual.
      ablation="no_library"       row "w/o Library" (and the paper's trained GRPO baseline):
                                  no query, retrieval, rerank or distil; GRPO on play only;
                                  evaluated without_library only.
      rl.lambda_rerank=0          row "lambda1 = 0" (the policy still reranks; no rerank loss).
      rl.lambda_distil=0          row "lambda2 = 0" (skills are still distilled and admitted; no
                                  distil loss); both 0: row "lambda1 = lambda2 = 0".
    SFT warm start (ours; off at paper settings, where the paper SFTs from a stronger model):
      sft.distil_demos, sft.query_demos: deterministic distil / query demonstrations from the
      expert episodes (task-type-level lessons and queries: methods.skill1.lessons);
      sft.distil_level: "episode" (this game's object and receptacle types) | "generic" (the
      goal object as X, the target as Y, where such objects usually are; the demo skills of the
      play and rerank demos too: methods.skill1.lessons.generic_lessons);
      sft.rerank_demos: rerank demonstrations (candidate demo skills of the task's own and
      other types, the own-type one first: methods.skill1.sft_data.rerank_demos);
      sft.skill_fraction: share of SFT play episodes with a demo skill in the play prompt
      (sft.irrelevant_fraction of those: a skill of another task type).
      play.think: the answer format of play prompts and SFT play demonstrations -- True (the
      paper's <think>...</think><action>...</action>) | False (ours: <action>...</action> alone;
      needs play.require_think=False; agents.agent_loop.PlayConfig).
    Evaluation: eval.splits (tuple or "a,b"; default env.eval_split), eval.n_tasks (0 = every
    game of each split), eval.batch_size (episodes per chunk; 0 = all at once), eval.at_steps
    (ours; "" = none, "12" or "10,20": after those RL steps the policy also plays the evaluation
    games without a library -- a held-out curve, ``eval_steps/step_<k>/``, metrics
    ``heldout/<split>``; methods.skill1.heldout).
    Play throughput (issue 17; the same episodes whichever is chosen, for the same seed):
      env.workers         game processes: 0 = in-process, N, or -1 = the cores this process may
                          use minus one (``agents.envs.runner.resolve_workers``; capped by
                          $SKILLAX_ENV_WORKERS when several runs share a machine).
      rollout.overlap     1 = lock-step play (one policy call per turn over every live episode;
                          the default: on a GPU an ALFWorld turn of ~10-20 ms per worker is
                          less than a policy call's fixed cost, so splitting calls loses) | K >= 2
                          = overlapped play (a call once 1/K of the live episodes wait; the
                          workers step the others) | -1 = "auto" (K = 2 while a turn of env work
                          per worker exceeds a call's measured fixed cost, else lock-step).
                          Play turns sample with per-(turn, episode) keys
                          (``methods.common.policy.TurnSampler``), so overlap never changes what
                          is sampled; the resets are started before the query stage either way.
      rollout.prefetch_resets  True (default): the next step's game resets are submitted to
                          the workers before this step's update, so they load behind it instead
                          of behind the next query stage (the GRPO arm has none); same
                          episodes. Only with env.workers > 0; skipped before an eval.at_steps
                          evaluation and when the clock says another step would not fit | False.
    """
    c = base("skill1")
    c.objective = "paper"          # "paper" | "released_code"
    c.ablation = "none"            # SKILL1_ABLATIONS (docstring)
    c.steps = 100
    c.tasks_per_step = 16
    c.group_size = 8
    # references: configs and overrides that change tasks_per_step / group_size move them too.
    # Each is an expression (`+ 0`), never the bare reference: ml_collections assigns through a
    # field that holds a reference, so `prefill_floor = get_ref("tasks_per_step")` made an
    # override `model.prefill_floor=0` set tasks_per_step to 0 (an empty step; session 28)
    c.model.batch_floor = c.get_ref("tasks_per_step") * c.get_ref("group_size")
    c.model.prefill_floor = c.get_ref("tasks_per_step") + 0
    c.temperature = 1.0
    c.checkpoint_every = 10
    c.keep_checkpoints = 2
    c.max_train_minutes = 0.0      # > 0: stop RL (with a checkpoint) after the step that passes it
    # tw_families: TextWorld families ("" = the four standard ones, "one_step" = one-action games,
    # or "challenge:key=value;..."; methods.common.tasks), tw_games_per_family games each.
    c.env = ml_collections.ConfigDict(dict(
        name=env_name, train_split="valid_train", eval_split="valid_unseen", max_steps=50,
        workers=0, n_train_tasks=0, tw_games_per_family=8, tw_families="", data_dir=""))
    c.rollout = ml_collections.ConfigDict(dict(
        top_k=5, threshold=0.4, query_tokens=32, rank_tokens=24, action_tokens=256, distil_tokens=512,
        distil_prompt_chars=3000, overlap=1, prefetch_resets=True))
    c.play = ml_collections.ConfigDict(dict(
        history_k=2, max_admissible=40, max_obs_chars=600, max_skill_chars=600, require_think=True,
        invalid_penalty=0.1, think=True))
    c.library = ml_collections.ConfigDict(dict(
        capacity=5000, alpha=0.05, merge_threshold=0.85, eviction="log2_n_plus_1", count_mode="selected",
        token_budget=0))
    c.rl = rl()
    c.rl.distil_parse_fail = "zero"
    c.rl.rerank_baseline = "none"
    c.rl.util_weighting = "token"
    c.train = train(lr=1e-6, total_steps=100)
    c.sft = sft()
    # also SFT the distil stage on deterministic JSON from each expert episode (ours, not the
    # paper's; off at paper settings. Small policies need it: SmolLM2 never emitted parsable
    # distil JSON without it, so nothing was admitted). Needs rollout.distil_tokens >= ~200.
    c.sft.distil_demos = False
    c.sft.query_demos = False
    c.sft.rerank_demos = False
    c.sft.distil_level = "episode"   # "episode" | "generic" (methods.skill1.lessons.generic_lessons)
    c.sft.skill_fraction = 0.0
    c.sft.irrelevant_fraction = 0.25
    c.eval = ml_collections.ConfigDict(dict(n_tasks=32, temperature=0.4, ablate_retrieval=True, splits="",
                                            batch_size=0, at_steps=""))
    return c
