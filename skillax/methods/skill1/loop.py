"""The Skill1 training loop (see the package docstring for the algorithm box).

Run contract (the learning campaign, BRIEF/PROTOCOL): a checkpoint in the workdir resumes;
else ``warmstart.load_dir`` starts from a saved SFT warm start (policy params only; the SFT
stages are skipped); else a warm start this run saved before (``save_dir`` or
``<workdir>/warmstart/``: a run that died before its first RL checkpoint) is loaded; else the
SFT stages run and are saved before RL (``warmstart.save_dir``, else ``<workdir>/warmstart/``;
``methods.common.warmstart.plan``). ``steps = 0`` runs no RL. RL stops at ``steps``, ``max_train_minutes`` or the
deadline (``methods.common.clock.RLClock``) with a checkpoint. Evaluation: every game of each
split of ``eval_splits(cfg)`` (``eval.n_tasks = 0``) under ``with_library`` and
``without_library`` (``eval.ablate_retrieval``); an arm that never had a library (``steps =
0`` with an empty library, or ``ablation = "no_library"``) evaluates ``without_library`` only.

Skills (issue 22): ``init_skills`` (a folder of SKILL.md folders) seeds the library when the
run does not resume (``skills.importing.seed_library``: U = 0.5, n = 1, attempt type
"imported"). ``<workdir>/skills/`` is the library through the Agent Skills export gate
(``skills.spec``) with run provenance (method, run id = the workdir's name, step), written at
every checkpoint and at the end: it always holds the last committed step's library.

Several processes (issue 21, ``skillax.distributed``): every process draws the same tasks,
plays its contiguous block of them on its own environment pool with its own sampler replica
(``rollout(offset=...)``: the sampling keys of the 1-process run), and the step's episodes are
all-gathered to every process (``skillax.collectives``, in task order). Every process then
applies the same deterministic library update and builds the same training batch from all
episodes, so the SQLite library stays byte-identical (checked by digest after every update:
a DistributedError on every process when it is not) and ``engine.train`` gets one global batch.
The stop decision is taken by all (any process's clock stops the run). Process 0 writes the
run's files (metrics, ``library.sqlite``, ``skills/``, ``eval/``, plots, ``sampler_builds.jsonl``,
``play_samples.jsonl``: ``methods.skill1.play_log``); the checkpoint is
orbax's multi-process save. With the same seed a 2-process run gives the 1-process run's
metrics, library and (up to fp32 summation order over the mesh) parameters.
"""

from __future__ import annotations

import collections
import contextlib
import json
import pathlib
import time

import numpy as np

from skillax import collectives, process
from skillax.compile_cache import compile_timer
from skillax.device_memory import peak_memory_metrics
from skillax.agents.envs import env_spec
from skillax.agents.envs.runner import EnvPool, resolve_workers
from skillax.config_defaults import SKILL1_ABLATIONS
from skillax.config_preset import preset_lines
from skillax.methods.common import host_state, run_dir
from skillax.methods.common.build_log import log_builds
from skillax.methods.common import tasks as task_lib
from skillax.methods.common import warmstart as ws_lib
from skillax.methods.common.clock import RLClock, next_step_estimate
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.eval_io import eval_splits, write_condition
from skillax.methods.common.play import play_config, play_overlap
from skillax.methods.common.rows import build_batch
from skillax.methods.skill1 import heldout, play_log
from skillax.methods.skill1 import precompile as pre_lib
from skillax.methods.skill1 import objectives as obj_lib
from skillax.methods.skill1 import prompts, sft_data
from skillax.methods.skill1.evaluate import evaluate_condition, library_stats
from skillax.methods.skill1.rollout import RolloutConfig, episode_tasks, rollout, update_library
from skillax.rl.metrics import MetricsWriter
from skillax.skills import budget as budget_lib
from skillax.skills import importing
from skillax.skills.library import SkillLibrary
from skillax.skills.retrieval import DenseIndex, load_minilm
from skillax.skills.spec import provenance


def ablation(cfg) -> str:
    """``cfg.ablation`` (``config_defaults.skill1``); ValueError for an unknown one."""
    a = str(cfg.get("ablation", "none") or "none")
    if a not in SKILL1_ABLATIONS:
        raise ValueError(f"ablation must be one of {SKILL1_ABLATIONS}, got {a!r}")
    return a


def rollout_config(cfg, *, use_retrieval: bool | None = None, distil: str | None = None) -> RolloutConfig:
    """The training rollout of ``cfg`` (its ablation), or with ``use_retrieval`` / ``distil``
    overridden (evaluation conditions)."""
    r, ab = cfg.rollout, ablation(cfg)
    use = (ab != "no_library") if use_retrieval is None else bool(use_retrieval)
    dis = {"no_distillation": "raw", "no_library": "off"}.get(ab, "policy") if distil is None else distil
    return RolloutConfig(top_k=int(r.top_k), threshold=float(r.threshold), query_tokens=int(r.query_tokens),
                         rank_tokens=int(r.rank_tokens), action_tokens=int(r.action_tokens),
                         distil_tokens=int(r.distil_tokens), max_steps=int(cfg.env.max_steps),
                         use_retrieval=use, selection=ab != "no_selection", distil=dis,
                         distil_prompt_chars=int(r.get("distil_prompt_chars", 3000)),
                         distil_parse_fail=str(cfg.rl.get("distil_parse_fail", "zero")),
                         overlap=play_overlap(r.get("overlap", 1)))


def make_pool(cfg) -> EnvPool:
    """The run's game pool: ``env.workers`` processes (-1 / "auto": sized to the cores)."""
    name = task_lib.resolve_env(cfg.env.name)
    spec = env_spec(name, max_steps=int(cfg.env.max_steps))
    return EnvPool(spec, n_workers=resolve_workers(cfg.env.workers), max_steps=int(cfg.env.max_steps))


def export_library(library, workdir: pathlib.Path, step: int | None) -> list[str]:
    """Write ``<workdir>/skills/`` (module docstring); ``step``: the last committed RL step
    (None: no RL step yet). Returns the folder names written."""
    return library.export_skill_md(workdir / "skills", provenance=provenance(
        "skill1", run_id=workdir.name, step=step if step is not None and step >= 0 else None))


def seed_from_config(cfg, library) -> int:
    """Seed ``library`` from ``cfg.init_skills`` (none when unset or when it already holds
    imported skills: a re-run of an attempt that never checkpointed); returns the number added."""
    report = importing.from_config(cfg)
    if report is None or any(r.attempt_type == "imported" for r in library.records()):
        return 0
    return len(importing.seed_library(library, report, step=0))


def record_token_count(tokenizer):
    """record -> tokens of the skill text the play prompt injects (``prompts.skill_text``: what
    the policy reads of a selected skill), counted with ``tokenizer`` (``skills.budget``)."""
    count = budget_lib.token_counter(tokenizer)
    return lambda rec: count(prompts.skill_text(rec.description_head, rec.strategy))


def _library_kwargs(cfg, encoder, tokenizer=None) -> dict:
    lc = cfg.library
    return dict(capacity=int(lc.capacity), alpha=float(lc.alpha), merge_threshold=float(lc.merge_threshold),
                eviction=str(lc.eviction), embed_fn=encoder.encode, token_budget=int(lc.get("token_budget", 0)),
                token_count=record_token_count(tokenizer))


def step_metrics(eps, counts, library, gens, batch, times) -> dict:
    """Per-RL-step metrics (learning-curve quantities included: success_rate, retrieval_rate,
    library_size, library_mean_utility, rerank_ndcg, distil_parse_ok; the library budget's:
    library_tokens = the library's size in tokens after the step (``SkillLibrary.size_tokens``),
    budget_evictions / budget_rejections = records evicted / skills refused for
    ``library.token_budget`` this step)."""
    r = np.array([ep.r for ep in eps])
    ranked = [ep for ep in eps if ep.rank is not None]
    play_steps = [ep.trajectory.n_steps for ep in eps]
    n_actions = max(sum(play_steps), 1)
    parsed = sum(bool(ep.distil is not None and ep.distil.ok) for ep in eps)
    distilled = sum(ep.distil is not None for ep in eps)
    m = {
        "success_rate": float(r.mean()),
        "mean_steps": float(np.mean(play_steps)),
        "invalid_action_rate": sum(ep.trajectory.n_invalid for ep in eps) / n_actions,
        "retrieval_rate": float(np.mean([bool(ep.retrieved_ids) for ep in eps])),
        "rerank_ndcg": float(np.mean([ep.r_rerank for ep in ranked])) if ranked else 0.0,
        "rerank_parse_fail": sum(not ep.rank.parsed_ok for ep in ranked),
        "reranked_episodes": len(ranked),
        "distil_reward": float(np.mean([ep.r_distil for ep in eps])),
        "distil_parse_ok": parsed,
        "distil_parse_rate": parsed / distilled if distilled else 0.0,
        "query_parse_fail": sum(not ep.query_ok for ep in eps if ep.retrieval_on),
        "retrieved_mean": float(np.mean([len(ep.retrieved_ids) for ep in eps])),
        "admissions": counts["admitted"], "merges": counts["merged"], "evictions": counts["evicted"],
        "library_size": len(library), "library_tokens": library.size_tokens(),
        "budget_evictions": counts.get("budget_evicted", 0), "budget_rejections": counts.get("budget_rejected", 0),
        "rows": len(gens), "batch_len": int(batch["tokens"].shape[1]),
        "policy_tokens": int(sum(len(g.completion_ids) for g in gens)),
    }
    utils = [rec.utility for rec in library.records()]
    m["library_mean_utility"] = float(np.mean(utils)) if utils else 0.0
    m.update(times)
    return m


LIBRARY_FILE = "library.sqlite"


def open_library(cfg, encoder, workdir: pathlib.Path, files: dict | None, tokenizer=None) -> SkillLibrary:
    """The run's working library in ``<workdir>/.staging/`` (``methods.common.host_state``).

    ``files``: the restored checkpoint's files (resume: the library it holds, committed again
    to ``<workdir>/library.sqlite`` in case the run died between its save and commit), or None
    without a checkpoint: a fresh library, and a ``library.sqlite`` left by a run that died
    before its first checkpoint is removed (never built on). ``tokenizer``: the policy's, for the
    library's token count (``record_token_count``; None = the ``skills.budget`` fallback)."""
    work = host_state.staging_dir(workdir) / LIBRARY_FILE
    kw = _library_kwargs(cfg, encoder, tokenizer)
    if files is None:
        if process.is_writer() and host_state.discard(workdir, [LIBRARY_FILE]):
            print(f"no checkpoint: removed {LIBRARY_FILE} of an earlier run that stopped before its first checkpoint")
        return SkillLibrary(work, **kw)
    if "library" not in files:
        return SkillLibrary(work, **kw)
    library = SkillLibrary.from_bytes(files["library"], work, **kw)
    if process.is_writer():
        host_state.commit_bytes(workdir / LIBRARY_FILE, files["library"])
    return library


def save_checkpoint(engine, step: int, stream, library: SkillLibrary, workdir: pathlib.Path) -> None:
    """Checkpoint ``step`` (params, optimiser, stream position, the library's bytes), then
    commit the same library bytes to ``<workdir>/library.sqlite`` (``host_state``)."""
    blob = library.state_bytes()
    engine.save(step, {"stream": stream.get_state()}, {"library": blob})
    if process.is_writer():
        host_state.commit_bytes(workdir / LIBRARY_FILE, blob)


def sft_stage(engine, cfg, train_tasks, pool) -> dict:
    """The SFT warm start: expert play transcripts (a ``sft.skill_fraction`` of the episodes
    with a demo skill in the play prompt), plus distil, query and rerank demonstrations
    (``methods.skill1.sft_data``). Returns the SFT summary."""
    from skillax.methods.common.sft_warmstart import play_sft_warmstart

    s = cfg.sft
    tasks = list(train_tasks)[: int(s.n_tasks)]
    fraction = float(s.get("skill_fraction", 0.0))
    demos, queries = bool(s.get("distil_demos", False)), bool(s.get("query_demos", False))
    max_steps = int(cfg.env.max_steps)
    reranks = bool(s.get("rerank_demos", False))
    records = sft_data.won_records(tasks) if (demos or queries or reranks or fraction > 0) else {}
    priors = sft_data.priors_for(cfg, tasks, records)
    assign = sft_data.skill_assignments(tasks, records, fraction, float(s.get("irrelevant_fraction", 0.25)),
                                        int(cfg.seed), max_steps, priors) if fraction > 0 else {}
    extra = sft_data.extra_transcripts(tasks, records, distil_demos=demos, query_demos=queries, max_steps=max_steps,
                                       max_chars=int(cfg.rollout.get("distil_prompt_chars", 3000)),
                                       rerank=reranks, seed=int(cfg.seed), top_k=int(cfg.rollout.top_k),
                                       priors=priors)
    out = play_sft_warmstart(engine, cfg, tasks, pool=pool if pool.n_workers > 1 else None,
                             skills_for=sft_data.skills_for(assign) if assign else None, extra_transcripts=extra)
    out["skill_episodes"] = dict(collections.Counter(kind for kind, _ in assign.values()))
    return out


def run(cfg, workdir=None):
    """Train, evaluate and export (module docstring). The env pool's worker processes, the
    checkpointer and the library database are closed also when a step raises (a notebook
    that catches the error keeps no stray processes)."""
    with contextlib.ExitStack() as cleanup:
        return _run(cfg, workdir, cleanup)


def _run(cfg, workdir, cleanup: contextlib.ExitStack):
    for line in preset_lines(cfg):
        print(line)
    cfg = obj_lib.apply_objective_preset(cfg)
    ab = ablation(cfg)
    workdir = pathlib.Path(workdir or "runs/skill1")
    run_dir.prepare(cfg, workdir)   # a resume with a config that changes the run's meaning fails here
    engine = PolicyEngine.create(cfg, workdir)
    cleanup.callback(engine.close)
    encoder = load_minilm()
    index = DenseIndex(encoder.encode, threshold=float(cfg.rollout.threshold), top_k=int(cfg.rollout.top_k))
    train_tasks = task_lib.load_tasks(cfg.env, cfg.env.train_split, cfg.env.get("n_train_tasks") or None)
    stream = task_lib.TaskStream(train_tasks, seed=int(cfg.seed))
    objectives = obj_lib.objective_configs(cfg)

    pool = make_pool(cfg)
    cleanup.callback(pool.close)
    start, host, files = engine.restore()
    library = open_library(cfg, encoder, workdir, files if host is not None else None, engine.tokenizer)
    cleanup.callback(library.close)
    if process.is_writer():                      # steps after the checkpoint run again
        host_state.truncate_jsonl(workdir / play_log.SAMPLES_FILE, start)
    if host is not None:                         # resume wins over any warm start
        stream.set_state(host["stream"])
        print(f"resumed from checkpoint: next step {start}")
    else:
        load_ws, save_ws, _ = ws_lib.plan(cfg, workdir)   # waits for load_dir when wait_s > 0
        if load_ws is not None:
            _, _, summary = load_ws.load(engine)
            print(f"warm start loaded from {load_ws.dir} (SFT skipped):", json.dumps(summary))
        else:
            sft_metrics = sft_stage(engine, cfg, train_tasks, pool) if int(cfg.sft.steps) > 0 else {}
            if sft_metrics:
                print("SFT warm start:", json.dumps(sft_metrics))
            if ws_lib.worth_saving(save_ws, cfg, sft_ran=bool(sft_metrics)):
                save_ws.save(engine, summary=sft_metrics, owner=ws_lib.owner(cfg, workdir))
                print(f"warm start saved to {save_ws.dir}")
        n_seeded = seed_from_config(cfg, library)         # init_skills (issue 22)
        if n_seeded:
            print(f"library seeded with {n_seeded} skills from {cfg.init_skills}")
    index.sync(library.retrieval_texts())

    policy = engine.policy_sampler(float(cfg.temperature))
    pcfg, rcfg = play_config(cfg), rollout_config(cfg)
    writer = MetricsWriter(workdir / "metrics.jsonl", total_steps=int(cfg.steps), initial_step=start,
                           bar_keys=("success_rate", "retrieval_rate", "library_size", "util/loss"))
    clock = RLClock.from_config(cfg).start()
    heldout_steps = heldout.at_steps(cfg)              # eval.at_steps: a held-out curve (ours)
    count_mode = str(cfg.library.get("count_mode", "selected"))
    committed = start - 1                        # the last checkpointed RL step (-1: none)
    prefetch = bool(cfg.rollout.get("prefetch_resets", True))   # rollout.prefetch_resets (below)
    started = False                              # this step's resets were submitted behind the last update
    last_step_s = 0.0                            # the clock's estimate of the next step (below)
    compile_s = compile_timer()
    # model.precompile: the step's sampling programs built now, not as play first meets them
    pre = pre_lib.precompile_step(engine, cfg, [t.goal for t in train_tasks], pcfg, rcfg,
                                  process.count()) if start < int(cfg.steps) else {}
    try:
        for step in range(start, int(cfg.steps)):
            t0, c0 = time.perf_counter(), compile_s()
            b0 = len(engine.sampler.builds)
            tasks = stream.take(int(cfg.tasks_per_step))
            s0, g0 = policy.seconds, policy.tokens_generated
            lo, hi = collectives.share(len(tasks))         # this process's block (all: one process)
            mine = rollout(tasks[lo:hi], int(cfg.group_size), policy, library, index, pool, pcfg, rcfg, offset=lo,
                           started=started)
            eps = collectives.concat(collectives.allgather_objects(mine))   # every process's, task order
            t_roll = time.perf_counter() - t0
            t_sample = policy.seconds - s0
            counts = update_library(eps, library, step, count_mode)
            if process.count() > 1:
                collectives.agree(f"the skill library after step {step}", library.state_bytes())
            index.sync(library.retrieval_texts())
            gens, advs = obj_lib.training_rows(eps, cfg.objective, tuple(objectives),
                                               lambda_rerank=float(cfg.rl.lambda_rerank),
                                               invalid_penalty=float(cfg.play.invalid_penalty),
                                               rerank_baseline=obj_lib.rerank_baseline(cfg.rl),
                                               util_weighting=obj_lib.util_weighting(cfg))
            batch = build_batch(gens, advs, list(objectives), length_buckets=tuple(cfg.train.length_buckets),
                                rows_multiple=int(cfg.train.micro_batch), drop_truncated=bool(cfg.rl.drop_truncated),
                                pad_id=int(engine.tokenizer.pad_token_id or 0))
            # the next step's game resets run on the idle workers behind this update (same
            # episodes: a reset depends on its task only); not before a held-out evaluation,
            # which plays its own games on the pool first, nor when the clock already says that
            # another step of the last one's length would not fit (the final evaluation would
            # first wait for unused resets), and only with worker processes (in-process resets
            # would run before the update, not beside it). The clock check is collective: every
            # process calls it when prefetch is configured.
            fits = prefetch and collectives.first_reason(clock.stop_reason(last_step_s)) is None
            started = fits and pool.n_workers > 0 and step + 1 < int(cfg.steps) and step not in heldout_steps
            if started:
                nxt = stream.peek(int(cfg.tasks_per_step))[lo:hi]
                started = bool(nxt)
                if started:
                    pool.start_batch(episode_tasks(nxt, int(cfg.group_size)))
            train_metrics = engine.train(batch, objectives)
            step_s = time.perf_counter() - t0
            step_compile_s = compile_s() - c0             # the next step reuses these programs
            last_step_s = next_step_estimate(step_s, step_compile_s)
            times = {"time/compile_s": step_compile_s,
                     "time/sampling_s": t_sample, "time/environment_s": t_roll - t_sample,
                     "time/update_s": train_metrics.pop("time/update_s"), "time/step_s": step_s,
                     "tokens_per_s_sampling": (policy.tokens_generated - g0) / max(t_sample, 1e-9),
                     "compile_count": engine.sampler.compile_count}
            times.update(log_builds(engine.sampler.builds[b0:], step, workdir))
            times.update(peak_memory_metrics())           # memory/peak_gb: an arm's GPU share from a run
            m = step_metrics(eps, counts, library, gens, batch, times)
            m.update(play_log.invalid_reasons(eps))       # invalid/<reason>: what the format drift is
            samples = play_log.play_samples(eps, step)
            m["groups_mixed"] = play_log.mixed_group_rate(samples["outcomes"])   # groups with signal
            play_log.write_samples(workdir, samples)
            m.update(train_metrics)
            m.update(pre)                                 # the first step of this process only
            pre = {}
            if step in heldout_steps:
                m.update(heldout.evaluate_at_step(
                    cfg, step, engine.policy_sampler(float(cfg.eval.temperature)), library, index, pool, pcfg,
                    rollout_config(cfg, use_retrieval=False, distil="off"), workdir))
            writer.write(step, m)
            stop = collectives.first_reason(clock.stop_reason(last_step_s))   # every process stops at the same step
            if (step + 1) % int(cfg.checkpoint_every) == 0 or step + 1 == int(cfg.steps) or stop:
                save_checkpoint(engine, step, stream, library, workdir)
                committed = step
                export_library(library, workdir, committed)   # skills/ = the last committed step
            if stop:
                print(f"{stop}; stopping RL after step {step} (re-run to resume)")
                break
    finally:
        writer.close()

    results = evaluate_run(cfg, engine, library, index, pool, pcfg, workdir,
                           never_had_library=ab == "no_library" or (int(cfg.steps) == 0 and len(library) == 0))
    exported = export_library(library, workdir, committed)
    print(f"library: {len(library)} skills exported to {workdir / 'skills'} ({len(exported)} files)")
    try:
        from skillax.rl.plot import plot

        plot(workdir / "metrics.jsonl", workdir / "metrics.png",
             keys=["success_rate", "retrieval_rate", "rerank_ndcg", "distil_reward", "library_size",
                   "invalid_action_rate", "util/loss"])
    except Exception as e:  # plotting must never fail a finished run
        print(f"plot skipped: {e}")
    return results


def eval_conditions(cfg, never_had_library: bool) -> tuple[str, ...]:
    """``with_library`` (+ ``without_library`` when ``eval.ablate_retrieval``); only
    ``without_library`` for an arm that never had a library."""
    if never_had_library:
        return ("without_library",)
    return ("with_library", "without_library") if bool(cfg.eval.ablate_retrieval) else ("with_library",)


def evaluate_run(cfg, engine, library, index, pool, pcfg, workdir, never_had_library: bool) -> dict:
    """Evaluate every condition on every split (module docstring); writes the records
    (``eval/<condition>__<split>.jsonl``) and ``eval.json`` = {condition: {split: summary},
    "library": stats}. ``eval.n_tasks`` < 0 skips evaluation."""
    n = int(cfg.eval.n_tasks)
    if n < 0:
        return {}
    policy = engine.policy_sampler(float(cfg.eval.temperature))
    results: dict = {}
    for split in eval_splits(cfg):
        tasks = task_lib.load_tasks(cfg.env, split, n or None)
        for cond in eval_conditions(cfg, never_had_library):
            rcfg = rollout_config(cfg, use_retrieval=cond == "with_library", distil="off")
            t0 = time.perf_counter()
            records = evaluate_condition(tasks, policy, library, index, pool, pcfg, rcfg,
                                         batch_size=int(cfg.eval.get("batch_size", 0)))
            summary = write_condition(workdir, cond, split, records)
            summary["seconds"] = round(time.perf_counter() - t0, 1)
            results.setdefault(cond, {})[split] = summary
            print(f"eval {cond} {split}: {summary['successes']}/{summary['n']} won, retrieval rate "
                  f"{summary['retrieval_rate']} ({summary['seconds']} s)")
    results["library"] = library_stats(library)
    if process.is_writer():
        (workdir / "eval.json").write_text(json.dumps(results, indent=2))
    return results
