"""The SkillOS training loop (``config.mode = "skillos"``).

    groups  <- task groups clustered by skill-relevant attributes (or random: ablation)
    for step in steps:
        G_1..G_B <- next groups_per_step groups of the seeded stream
        rollouts <- Algorithm 1 on every (G_b, n), n < N; each repo starts empty
        r_n      <- r_task + λ_f r_fc + λ_u r_cnt + λ_c r_comp        (after each group)
        A_n      <- r_n − mean_{n'} r_{n'} ;  every curator generation of rollout n gets A_n
        engine.train(PPO-clip on curator tokens)
        metrics JSONL; checkpoint (params, opt state, stream position, the step's repos)
        stop (with a checkpoint) once RL has run ``max_train_minutes``; a re-run resumes
    evaluate on held-out groups: online-curated repo vs no repo; export the best repo

Before RL, optional warm starts: the executor's play-format SFT (``sft.play_steps``; ours, for
small executors, taken before the frozen copy) and the curator's SFT (``sft.steps``).

Outputs under ``workdir``: ``config.json``, ``metrics.jsonl``, ``metrics.png``,
``eval.json`` (and ``eval.jsonl`` with ``eval.every``), ``sft_curator.jsonl`` (warm-start
transcripts), ``skills/<name>/SKILL.md`` (the highest-reward repo of the last step),
``checkpoints/``.
"""
from __future__ import annotations

import collections
import contextlib
import json
import pathlib
import shutil
import time

import numpy as np

from skillax.agents.agent_loop import PlayConfig
from skillax.agents.envs import env_spec
from skillax.agents.envs.runner import EnvPool
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.rows import build_batch
from skillax.methods.skillos import objectives as obj_lib
from skillax.methods.skillos import rewards
from skillax.methods.skillos.evaluate import evaluate
from skillax.methods.skillos.executor import Executor, PolicyChat, WorkerChat
from skillax.methods.skillos.groups import GroupStream, make_groups
from skillax.methods.skillos.rollout import OP_KINDS, RolloutConfig, rollout_step, score_rollouts
from skillax.methods.skillos.tasks import env_name, load_tasks
from skillax.rl.metrics import MetricsWriter
from skillax.skills.evidence import EvidenceConfig
from skillax.skills.repo import SkillRepo


def play_config(cfg) -> PlayConfig:
    p = cfg.play
    return PlayConfig(history_k=int(p.history_k), max_admissible=int(p.max_admissible),
                      max_obs_chars=int(p.max_obs_chars), max_skill_chars=int(p.max_skill_chars),
                      max_skills=int(p.max_skills), require_think=bool(p.require_think),
                      invalid_penalty=float(p.invalid_penalty), max_action_chars=int(p.max_action_chars))


def rollout_config(cfg) -> RolloutConfig:
    r = cfg.rollout
    return RolloutConfig(top_k=int(r.top_k), retrieval_fields=tuple(f.strip() for f in r.retrieval_fields.split(",")),
                         curator_tokens=int(r.curator_tokens), curator_prefix=str(r.curator_prefix),
                         max_prompt_tokens=int(r.max_prompt_tokens),
                         evidence=EvidenceConfig(units_per_chunk=1, max_steps=int(r.evidence_steps),
                                                 max_traj_chars=int(r.evidence_chars)),
                         max_skill_chars=int(r.max_skill_chars))


def _openai_worker(c):
    from skillax.agents.workers.openai_compat import OpenAICompatConfig, OpenAICompatWorker

    if not c.model:
        raise ValueError("an OpenAI-compatible worker needs .model (and usually .base_url)")
    return OpenAICompatWorker(OpenAICompatConfig(
        model=str(c.model), base_url=str(c.base_url) or None, api_key_env=str(c.api_key_env),
        max_retries=int(c.max_retries), timeout_s=float(c.timeout_s),
        max_concurrency=int(c.get("max_concurrency", 8))))


def make_executor(cfg, engine, frozen_params) -> Executor:
    """The frozen π_L: a frozen copy of the initial policy, or an OpenAI-compatible endpoint."""
    e = cfg.executor
    if e.kind == "policy":
        backend = PolicyChat(engine.policy_sampler(float(e.temperature), frozen_params=frozen_params),
                             max_len=int(cfg.model.max_len))
    elif e.kind == "openai":
        backend = WorkerChat(_openai_worker(e), float(e.temperature))
    else:
        raise ValueError(f"executor.kind must be 'policy' or 'openai', got {e.kind!r}")
    return Executor(backend, play_config(cfg), action_tokens=int(e.action_tokens),
                    max_steps=int(cfg.env.max_steps), self_judge=str(e.self_judge),
                    judge_tokens=int(e.judge_tokens))


def make_judge(cfg, engine, frozen_params):
    """ContentJudge for r_cnt, or None (``judge.kind = "off"``)."""
    j = cfg.judge
    if j.kind == "off":
        return None
    from skillax.agents.judges import ContentJudge

    if j.kind == "openai":
        worker = _openai_worker(j)
    elif j.kind == "policy":
        from skillax.agents.workers.local import LocalWorker
        from skillax.engine.sampler import make_generate_fn

        worker = LocalWorker(engine.tokenizer, make_generate_fn(engine.sampler, frozen_params, seed=int(cfg.seed)),
                             max_prompt_tokens=int(cfg.model.max_len) - int(j.max_tokens))
    else:
        raise ValueError(f"judge.kind must be 'off', 'openai' or 'policy', got {j.kind!r}")
    return ContentJudge(worker, max_retries=int(j.max_retries), scale=int(j.scale), max_tokens=int(j.max_tokens))


def train_budget_s(cfg) -> float:
    """RL wall-clock budget in seconds from ``max_train_minutes`` (0 = none)."""
    return 60.0 * float(cfg.get("max_train_minutes", 0.0) or 0.0)


def out_of_time(elapsed_s: float, budget_s: float) -> bool:
    """True after the step whose end is past ``budget_s`` seconds of RL (``budget_s`` <= 0: never).
    The loop then checkpoints, stops training and still evaluates/exports (Skill1's semantics)."""
    return budget_s > 0 and elapsed_s > budget_s


def spread(tasks, n: int) -> list:
    """``n`` tasks taken round-robin over the families (sorted), so a few cover every type."""
    fams: dict[str, list] = collections.defaultdict(list)
    for t in tasks:
        fams[t.family].append(t)
    out, i = [], 0
    while len(out) < n and any(i < len(v) for v in fams.values()):
        out += [v[i] for _, v in sorted(fams.items()) if i < len(v)][: n - len(out)]
        i += 1
    return out


def fill_expert_cache(cfg, tasks) -> None:
    """ALFWorld: run the planner for uncached games in ``env.workers`` processes (cached: no-op)."""
    if env_name(cfg.env) == "alfworld" and tasks:
        from skillax.agents.envs.experts import alfworld_experts

        alfworld_experts(list(tasks), n_workers=max(1, int(cfg.env.workers)))


def executor_warmstart(cfg, engine, pool) -> dict:
    """Play-format SFT of the executor (``sft.play_steps`` updates at ``sft.play_lr``, rows of
    ``sft.play_max_len``) on expert replays of ``sft.play_tasks`` train games spread over the
    task types, replayed on ``pool`` (``methods.common.sft_warmstart``, as Skill1/Skill-α)."""
    from skillax.methods.common.sft_warmstart import play_sft_warmstart

    if env_name(cfg.env) == "reasoning":
        raise ValueError("sft.play_steps needs a play environment (alfworld / textworld), not reasoning")
    train_tasks = load_tasks(cfg.env, cfg.env.train_split, int(cfg.env.n_train_tasks) or None)
    tasks = spread(train_tasks, int(cfg.sft.play_tasks))
    fill_expert_cache(cfg, tasks)
    pc = cfg.copy_and_resolve_references()
    pc.sft.steps, pc.sft.lr, pc.sft.n_tasks = int(cfg.sft.play_steps), float(cfg.sft.play_lr), len(tasks)
    pc.sft.max_len = min(int(cfg.sft.play_max_len), int(cfg.model.max_len))
    return play_sft_warmstart(engine, pc, tasks, play_config(cfg), pool=pool)


def make_pool(cfg) -> EnvPool:
    name = env_name(cfg.env)
    kwargs = {} if name == "reasoning" else {"max_steps": int(cfg.env.max_steps)}
    return EnvPool(env_spec(name, **kwargs), n_workers=int(cfg.env.workers),
                   max_steps=None if name == "reasoning" else int(cfg.env.max_steps))


def step_metrics(rolls, info: dict, gens, batch, adv, times: dict, executor_stats: dict) -> dict:
    """One metrics line: r and each term, task outcomes, ops by kind, repo size, sizes, times."""
    recs = [rec for r in rolls for rec in r.records]
    ops = collections.Counter()
    for r in rolls:
        ops.update(r.ops())
    succ = [rec.success for rec in recs]
    m = {"r": float(np.mean([r.r for r in rolls])), "r_std": float(np.std([r.r for r in rolls])),
         "r_task": float(np.mean([r.r_task for r in rolls])), "r_fc": float(np.mean([r.r_fc for r in rolls])),
         "r_cnt": float(np.mean([r.r_cnt for r in rolls])), "r_comp": float(np.mean([r.r_comp for r in rolls])),
         "r_cnt_judge": info["r_cnt_judge"], "adv_abs_mean": float(np.mean(np.abs(adv))),
         "success_rate": float(np.mean(succ)) if succ else 0.0,
         "success_after_first": float(np.mean([rec.success for r in rolls for rec in r.records[1:]] or [0.0])),
         "mean_steps": float(np.mean([rec.n_steps for rec in recs])) if recs else 0.0,
         "self_judge_agreement": float(np.mean([rec.judged == rec.success for rec in recs])) if recs else 0.0,
         "executor_failed_episodes": sum(rec.failed for rec in recs),
         "calls_total": sum(ops.values()), "calls_invalid": ops["invalid"],
         "repo_skills": float(np.mean([len(r.repo) for r in rolls])),
         "repo_tokens": float(np.mean([r.repo_tokens for r in rolls])),
         "evidence_tokens": float(np.mean([r.evidence_tokens for r in rolls])),
         "retrieved_mean": float(np.mean([len(rec.retrieved) for rec in recs])) if recs else 0.0,
         "rows": len(gens), "batch_len": int(batch["tokens"].shape[1]),
         "policy_tokens": int(sum(len(g.completion_ids) for g in gens)),
         "truncated_generations": sum(g.stop_reason == "length" for g in gens)}
    m.update({f"ops/{k}": ops[k] for k in OP_KINDS})
    m.update({f"executor/{k}": int(executor_stats.get(k, 0))
              for k in ("calls", "requests", "errors", "too_long", "judge_unparsed")})
    m.update(times)
    return m


def curator_sft(engine, cfg, train_groups, workdir: pathlib.Path, executor) -> dict:
    """Curator warm start: demonstrations for the first ``sft.n_tasks`` tasks' groups
    (``sft.teacher``: rule teacher over expert trajectories, or the executor endpoint), written
    to ``sft_curator.jsonl``, then ``sft.steps`` SFT updates on them."""
    from skillax.methods.skillos import sft_data

    groups = []
    n = 0
    for g in train_groups:
        if n >= int(cfg.sft.n_tasks):
            break
        groups.append(g)
        n += len(g)
    if cfg.sft.teacher == "rules":
        fill_expert_cache(cfg, [t for g in groups for t in g.tasks])
    rcfg = rollout_config(cfg)
    kw = dict(evidence=rcfg.evidence, top_k=rcfg.top_k, fields=rcfg.retrieval_fields,
              max_skill_chars=rcfg.max_skill_chars)
    if cfg.sft.teacher == "rules":
        records, stats = sft_data.expert_demonstrations(groups, groups_per_stream=int(cfg.sft.groups_per_stream),
                                                        unused_after=int(cfg.sft.unused_after), **kw)
    elif cfg.sft.teacher == "worker":
        if not isinstance(executor.backend, WorkerChat):
            raise ValueError("sft.teacher='worker' needs executor.kind='openai' (the teacher endpoint)")
        records, stats = sft_data.worker_demonstrations(groups, executor.backend.worker, **kw)
    else:
        raise ValueError(f"sft.teacher must be 'rules' or 'worker', got {cfg.sft.teacher!r}")
    path = workdir / "sft_curator.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    stats = dict(stats, path=str(path))
    if not records:
        return {**stats, "skipped": "no demonstrations"}
    return {**stats, **sft_on_transcripts(engine, cfg, [r["messages"] for r in records])}


def sft_on_transcripts(engine, cfg, transcripts) -> dict:
    """``cfg.sft.steps`` SFT updates (``engine.sft``: its own AdamW + warmup/cosine) on chat
    transcripts with assistant-only loss masks (``render_with_masks``). Returns NLL first/last."""
    from skillax.rl.data import make_iterator, sft_dataset
    from skillax.tokenizers.chat import render_with_masks

    tok = engine.tokenizer
    mb = int(cfg.train.micro_batch)
    ds = sft_dataset([{"messages": m} for m in transcripts], lambda m: render_with_masks(tok, m),
                     batch_size=int(cfg.sft.batch_size), max_len=int(cfg.sft.max_len), seed=int(cfg.seed),
                     pad_id=int(tok.pad_token_id or 0), drop_remainder=False)
    it = make_iterator(ds)

    def batches():
        while True:
            b = {k: np.asarray(v) for k, v in next(it).items()}
            rows = b["tokens"].shape[0]
            want = -(-rows // mb) * mb
            if rows < want:  # pad a partial batch with empty rows (zero loss mask)
                b = {k: np.concatenate([v, np.zeros((want - rows,) + v.shape[1:], v.dtype)]) for k, v in b.items()}
            yield b

    hist = engine.sft(batches(), lr=float(cfg.sft.lr), steps=int(cfg.sft.steps),
                      warmup_ratio=float(cfg.sft.warmup_ratio))
    return {"transcripts": len(transcripts), "sft_steps": len(hist), "nll_first": hist[0]["nll"],
            "nll_last": hist[-1]["nll"], "seconds": sum(h["time_s"] for h in hist)}


def export_repo(state: dict, folder: pathlib.Path) -> int:
    """Write a repo ``state()`` as ``folder/<name>/SKILL.md`` (replacing the folder)."""
    if folder.exists():
        shutil.rmtree(folder)
    return len(SkillRepo.from_state(folder, state, durable=False))


def run(cfg, workdir=None):
    """Train, evaluate and export (module docstring). The env pool's worker processes and
    the checkpointer are closed also when a step raises."""
    with contextlib.ExitStack() as cleanup:
        return _run(cfg, workdir, cleanup)


def _run(cfg, workdir, cleanup: contextlib.ExitStack):
    workdir = pathlib.Path(workdir or "runs/skillos")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.json").write_text(cfg.to_json_best_effort(indent=2))
    if abs(float(cfg.rl.temperature) - float(cfg.temperature)) > 1e-9:
        raise ValueError(f"rl.temperature ({cfg.rl.temperature}) must equal the curator's rollout "
                         f"temperature ({cfg.temperature}): the trainer scores that distribution (PITFALLS 6)")
    if int(cfg.tasks_per_group) < 2 or int(cfg.min_group_tasks) < 2:
        raise ValueError("tasks_per_group and min_group_tasks must be >= 2: r_task scores the tasks that "
                         "ran after the first curation")
    engine = PolicyEngine.create(cfg, workdir)
    cleanup.callback(engine.close)
    pool = make_pool(cfg)
    cleanup.callback(pool.close)
    # the executor's frozen weights are saved with the run: a resume reloads them instead of
    # re-running the (not bit-reproducible on GPU) play SFT
    resuming = engine.has_checkpoint() and engine.has_frozen("executor")
    if int(cfg.sft.get("play_steps", 0)) > 0 and not resuming:   # before the frozen copy
        print("executor play SFT warm start:", json.dumps(executor_warmstart(cfg, engine, pool)))
    # the executor: weights before any restore or curator update
    frozen = engine.persistent_frozen("executor", reuse=resuming)
    executor = make_executor(cfg, engine, frozen)
    judge = make_judge(cfg, engine, frozen)
    weights = rewards.RewardWeights(float(cfg.reward.fc), float(cfg.reward.cnt), float(cfg.reward.comp))
    train_tasks = load_tasks(cfg.env, cfg.env.train_split, int(cfg.env.n_train_tasks) or None)
    groups = make_groups(train_tasks, int(cfg.tasks_per_group), grouping=str(cfg.grouping), seed=int(cfg.seed),
                         min_size=int(cfg.min_group_tasks))
    stream = GroupStream(groups, seed=int(cfg.seed))
    objectives = obj_lib.objective_configs(cfg.rl)
    rcfg = rollout_config(cfg)
    tok = engine.tokenizer
    count_tokens = lambda s: len(tok.encode(s, add_special_tokens=False))  # noqa: E731
    print(f"skillos: {len(train_tasks)} train tasks -> {len(groups)} groups ({cfg.grouping}); "
          f"{cfg.groups_per_step} groups x {cfg.group_size} rollouts per step")

    start, host, _ = engine.restore()
    best_state = None
    if host is not None:
        stream.set_state(host["stream"])
        best_state = host.get("best_repo")
        print(f"resumed from checkpoint: next step {start}")
    elif int(cfg.sft.steps) > 0:
        print("curator SFT warm start:", json.dumps(curator_sft(engine, cfg, groups, workdir, executor)))

    curator = engine.policy_sampler(float(cfg.temperature))
    writer = MetricsWriter(workdir / "metrics.jsonl", total_steps=int(cfg.steps), initial_step=start,
                           bar_keys=("r", "r_task", "r_fc", "repo_skills"))
    rollout_root = workdir / "rollouts"
    budget_s = train_budget_s(cfg)
    t_start = time.perf_counter()
    try:
        for step in range(start, int(cfg.steps)):
            t0 = time.perf_counter()
            timings: collections.Counter = collections.Counter()
            executor.stats.clear()
            rolls = rollout_step(stream.take(int(cfg.groups_per_step)), int(cfg.group_size), curator, executor,
                                 pool, rollout_root, rcfg, step=step, timings=timings)
            info = score_rollouts(rolls, count_tokens, judge, weights)
            gens, rows, adv = obj_lib.training_rows(rolls)
            batch = build_batch(gens, rows, list(objectives), length_buckets=tuple(cfg.train.length_buckets),
                                rows_multiple=int(cfg.train.micro_batch), drop_truncated=bool(cfg.rl.drop_truncated),
                                pad_id=int(tok.pad_token_id or 0))
            t_roll = time.perf_counter() - t0
            train_metrics = engine.train(batch, objectives)
            times = {"time/rollout_s": t_roll, "time/executor_s": timings["executor_s"],
                     "time/curator_s": timings["curator_s"], "time/retrieve_s": timings["retrieve_s"],
                     "time/judge_s": info["judge_s"], "time/update_s": train_metrics.pop("time/update_s", 0.0),
                     "time/step_s": time.perf_counter() - t0}
            m = step_metrics(rolls, info, gens, batch, adv, times, dict(executor.stats))
            m.update(train_metrics)
            writer.write(step, m)
            best = max(rolls, key=lambda r: (r.r, -r.index))
            best_state = best.repo.state()
            stop = out_of_time(time.perf_counter() - t_start, budget_s)
            if (step + 1) % int(cfg.checkpoint_every) == 0 or step + 1 == int(cfg.steps) or stop:
                engine.save(step, {"stream": stream.get_state(), "best_repo": best_state,
                                   "repos": {f"g{r.group}-n{r.n}": r.repo.state() for r in rolls}})
            if stop:
                print(f"max_train_minutes={cfg.max_train_minutes} reached after step {step}; "
                      f"stopping training (re-run to resume)")
                break
            if int(cfg.eval.every) and (step + 1) % int(cfg.eval.every) == 0 and step + 1 < int(cfg.steps):
                res = run_eval(cfg, engine, executor, pool, workdir)
                with open(workdir / "eval.jsonl", "a", encoding="utf-8") as f:
                    f.write(json.dumps({"step": step, **res}) + "\n")
    finally:
        writer.close()

    results = run_eval(cfg, engine, executor, pool, workdir) if int(cfg.eval.n_groups) > 0 else {}
    if results:
        (workdir / "eval.json").write_text(json.dumps(results, indent=2))
        print("eval:", json.dumps(results))
    if best_state is not None:
        n = export_repo(best_state, workdir / "skills")
        print(f"curated repo (best rollout of the last step): {n} skills in {workdir / 'skills'}")
    shutil.rmtree(rollout_root, ignore_errors=True)
    try:
        from skillax.rl.plot import plot

        plot(workdir / "metrics.jsonl", workdir / "metrics.png",
             keys=["r", "r_task", "r_fc", "r_comp", "repo_skills", "curate/loss"])
    except Exception as e:  # plotting must never fail a finished run
        print(f"plot skipped: {e}")
    return results


def run_eval(cfg, engine, executor, pool, workdir: pathlib.Path) -> dict:
    """Held-out groups (``env.eval_split``): curated repo vs no repo, repo statistics."""
    tasks = load_tasks(cfg.env, cfg.env.eval_split, int(cfg.env.n_eval_tasks) or None)
    groups = make_groups(tasks, int(cfg.tasks_per_group), grouping=str(cfg.grouping), seed=int(cfg.seed),
                         min_size=int(cfg.min_group_tasks))[: int(cfg.eval.n_groups)]
    t0 = time.perf_counter()
    res = evaluate(groups, engine.policy_sampler(float(cfg.eval.temperature)), executor, pool,
                   workdir / "rollouts", rollout_config(cfg), no_repo=bool(cfg.eval.no_repo))
    res["n_groups"] = len(groups)
    res["seconds"] = time.perf_counter() - t0
    return res
