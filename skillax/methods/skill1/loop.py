"""The Skill1 training loop (see the package docstring for the algorithm box)."""

from __future__ import annotations

import contextlib
import json
import pathlib
import time

import numpy as np

from skillax.agents.agent_loop import PlayConfig
from skillax.agents.envs import env_spec
from skillax.agents.envs.runner import EnvPool
from skillax.methods.common import tasks as task_lib
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.rows import build_batch
from skillax.methods.skill1 import objectives as obj_lib
from skillax.methods.skill1 import prompts
from skillax.methods.skill1.evaluate import evaluate, library_stats
from skillax.methods.skill1.rollout import RolloutConfig, rollout, update_library
from skillax.rl.metrics import MetricsWriter
from skillax.skills.library import SkillLibrary
from skillax.skills.retrieval import DenseIndex, load_minilm


def play_config(cfg) -> PlayConfig:
    p = cfg.play
    return PlayConfig(history_k=int(p.history_k), max_admissible=int(p.max_admissible),
                      max_obs_chars=int(p.max_obs_chars), max_skill_chars=int(p.max_skill_chars),
                      max_skills=1, require_think=bool(p.require_think),
                      invalid_penalty=float(p.invalid_penalty))


def rollout_config(cfg, *, use_retrieval=True, distil=True) -> RolloutConfig:
    r = cfg.rollout
    return RolloutConfig(top_k=int(r.top_k), threshold=float(r.threshold), query_tokens=int(r.query_tokens),
                         rank_tokens=int(r.rank_tokens), action_tokens=int(r.action_tokens),
                         distil_tokens=int(r.distil_tokens), max_steps=int(cfg.env.max_steps),
                         use_retrieval=use_retrieval, distil=distil)


def make_pool(cfg) -> EnvPool:
    name = task_lib.resolve_env(cfg.env.name)
    spec = env_spec(name, max_steps=int(cfg.env.max_steps))
    return EnvPool(spec, n_workers=int(cfg.env.workers), max_steps=int(cfg.env.max_steps))


def open_library(cfg, path: pathlib.Path, encoder) -> SkillLibrary:
    lc = cfg.library
    return SkillLibrary(path, capacity=int(lc.capacity), alpha=float(lc.alpha),
                        merge_threshold=float(lc.merge_threshold), eviction=str(lc.eviction),
                        embed_fn=encoder.encode)


def step_metrics(eps, counts, library, gens, batch, times) -> dict:
    r = np.array([ep.r for ep in eps])
    ranked = [ep for ep in eps if ep.rank is not None]
    play_steps = [ep.trajectory.n_steps for ep in eps]
    n_actions = max(sum(play_steps), 1)
    m = {
        "success_rate": float(r.mean()),
        "mean_steps": float(np.mean(play_steps)),
        "invalid_action_rate": sum(ep.trajectory.n_invalid for ep in eps) / n_actions,
        "rerank_ndcg": float(np.mean([ep.r_rerank for ep in ranked])) if ranked else 0.0,
        "rerank_parse_fail": sum(not ep.rank.parsed_ok for ep in ranked),
        "reranked_episodes": len(ranked),
        "distil_reward": float(np.mean([ep.r_distil for ep in eps])),
        "distil_parse_ok": sum(bool(ep.distil is not None and ep.distil.ok) for ep in eps),
        "query_parse_fail": sum(not ep.query_ok for ep in eps),
        "retrieved_mean": float(np.mean([len(ep.retrieved_ids) for ep in eps])),
        "admissions": counts["admitted"], "merges": counts["merged"], "evictions": counts["evicted"],
        "library_size": len(library),
        "rows": len(gens), "batch_len": int(batch["tokens"].shape[1]),
        "policy_tokens": int(sum(len(g.completion_ids) for g in gens)),
    }
    utils = [rec.utility for rec in library.records()]
    m["library_mean_utility"] = float(np.mean(utils)) if utils else 0.0
    m.update(times)
    return m


def run(cfg, workdir=None):
    """Train, evaluate and export (module docstring). The env pool's worker processes, the
    checkpointer and the library database are closed also when a step raises (a notebook
    that catches the error keeps no stray processes)."""
    with contextlib.ExitStack() as cleanup:
        return _run(cfg, workdir, cleanup)


def _run(cfg, workdir, cleanup: contextlib.ExitStack):
    cfg = obj_lib.apply_objective_preset(cfg)
    workdir = pathlib.Path(workdir or "runs/skill1")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.json").write_text(cfg.to_json_best_effort(indent=2))
    engine = PolicyEngine.create(cfg, workdir)
    cleanup.callback(engine.close)
    encoder = load_minilm()
    library = open_library(cfg, workdir / "library.sqlite", encoder)
    cleanup.callback(lambda: library.close())   # the current one (a resume replaces it)
    index = DenseIndex(encoder.encode, threshold=float(cfg.rollout.threshold), top_k=int(cfg.rollout.top_k))
    train_tasks = task_lib.load_tasks(cfg.env, cfg.env.train_split, cfg.env.get("n_train_tasks") or None)
    stream = task_lib.TaskStream(train_tasks, seed=int(cfg.seed))
    objectives = obj_lib.objective_configs(cfg)

    pool = make_pool(cfg)
    cleanup.callback(pool.close)
    start, host, files = engine.restore()
    if host is not None:
        stream.set_state(host["stream"])
        if "library" in files:
            library.close()
            library = SkillLibrary.from_bytes(files["library"], workdir / "library.sqlite",
                                              capacity=int(cfg.library.capacity), alpha=float(cfg.library.alpha),
                                              merge_threshold=float(cfg.library.merge_threshold),
                                              eviction=str(cfg.library.eviction), embed_fn=encoder.encode)
        print(f"resumed from checkpoint: next step {start}")
    elif cfg.sft.steps > 0:
        from skillax.methods.common.sft_warmstart import play_sft_warmstart

        demo = None
        if cfg.sft.get("distil_demos", False):
            def demo(task, actions, obs, won):
                return prompts.distil_demonstration(task.goal, actions, obs, won)
        # expert replays in lock-step on the env workers when there are several
        sft_metrics = play_sft_warmstart(engine, cfg, train_tasks, episode_demo=demo,
                                         pool=pool if int(cfg.env.workers) > 1 else None)
        print("SFT warm start:", json.dumps(sft_metrics))
    index.sync(library.retrieval_texts())

    policy = engine.policy_sampler(float(cfg.temperature))
    pcfg, rcfg = play_config(cfg), rollout_config(cfg)
    writer = MetricsWriter(workdir / "metrics.jsonl", total_steps=int(cfg.steps), initial_step=start,
                           bar_keys=("success_rate", "rerank_ndcg", "library_size", "util/loss"))
    budget_s = 60.0 * float(cfg.get("max_train_minutes", 0.0) or 0.0)
    t_start = time.perf_counter()
    try:
        for step in range(start, int(cfg.steps)):
            t0 = time.perf_counter()
            tasks = stream.take(int(cfg.tasks_per_step))
            s0, g0 = policy.seconds, policy.tokens_generated
            eps = rollout(tasks, int(cfg.group_size), policy, library, index, pool, pcfg, rcfg)
            t_roll = time.perf_counter() - t0
            t_sample = policy.seconds - s0
            counts = update_library(eps, library, step)
            index.sync(library.retrieval_texts())
            gens, advs = obj_lib.training_rows(eps, cfg.objective)
            batch = build_batch(gens, advs, list(objectives), length_buckets=tuple(cfg.train.length_buckets),
                                rows_multiple=int(cfg.train.micro_batch), drop_truncated=bool(cfg.rl.drop_truncated),
                                pad_id=int(engine.tokenizer.pad_token_id or 0))
            train_metrics = engine.train(batch, objectives)
            times = {"time/sampling_s": t_sample, "time/environment_s": t_roll - t_sample,
                     "time/update_s": train_metrics.pop("time/update_s"),
                     "time/step_s": time.perf_counter() - t0,
                     "tokens_per_s_sampling": (policy.tokens_generated - g0) / max(t_sample, 1e-9),
                     "compile_count": engine.sampler.compile_count}
            m = step_metrics(eps, counts, library, gens, batch, times)
            m.update(train_metrics)
            writer.write(step, m)
            out_of_time = budget_s > 0 and time.perf_counter() - t_start > budget_s
            if (step + 1) % int(cfg.checkpoint_every) == 0 or step + 1 == int(cfg.steps) or out_of_time:
                engine.save(step, {"stream": stream.get_state()}, {"library": library.state_bytes()})
            if out_of_time:
                print(f"max_train_minutes={cfg.max_train_minutes} reached after step {step}; "
                      f"stopping training (re-run to resume)")
                break
    finally:
        writer.close()

    results = {}
    if int(cfg.eval.n_tasks) > 0:
        eval_tasks = task_lib.load_tasks(cfg.env, cfg.env.eval_split, int(cfg.eval.n_tasks))
        eval_policy = engine.policy_sampler(float(cfg.eval.temperature))
        for use in ((True, False) if cfg.eval.ablate_retrieval else (True,)):
            key = "with_library" if use else "without_library"
            results[key] = evaluate(eval_tasks, eval_policy, library, index, pool, pcfg,
                                    rollout_config(cfg, use_retrieval=use, distil=False))
        results["library"] = library_stats(library)
        (workdir / "eval.json").write_text(json.dumps(results, indent=2))
        print("eval:", json.dumps({k: v for k, v in results.items() if k != "library"}))
    exported = library.export_skill_md(workdir / "skills")
    print(f"library: {len(library)} skills exported to {workdir / 'skills'} ({len(exported)} files)")
    try:
        from skillax.rl.plot import plot

        plot(workdir / "metrics.jsonl", workdir / "metrics.png",
             keys=["success_rate", "rerank_ndcg", "distil_reward", "library_size", "invalid_action_rate",
                   "util/loss"])
    except Exception as e:  # plotting must never fail a finished run
        print(f"plot skipped: {e}")
    return results
