"""The SkillOS training loop (``config.mode = "skillos"``).

    groups  <- task groups clustered by skill-relevant attributes (or random: ablation)
    for step in steps:
        G_1..G_B <- next groups_per_step groups of the seeded stream
        rollouts <- Algorithm 1 on every (G_b, n), n < N; each repo starts empty
        r_n      <- r_task + λ_f r_fc + λ_u r_cnt + λ_c r_comp        (after each group)
        A_n      <- r_n − mean_{n'} r_{n'} ;  every curator generation of rollout n gets A_n
        engine.train(PPO-clip on curator tokens)
        metrics JSONL; checkpoint (params, opt state, stream position, the step's repos)
        stop (with a checkpoint) when the RLClock says so (``max_train_minutes``,
        ``train_until_unix`` / ``train_until_file``); a re-run resumes
    evaluate every game of every eval split: no_memory / curated / handwritten; export the best repo

Before RL, optional warm starts: the executor's play-format SFT (``sft.play_steps``; ours, for
small executors, taken before the frozen copy; :mod:`~skillax.methods.skillos.executor_sft`)
and the curator's SFT (``sft.steps``). Warm start shared by the arms of an experiment
(``warmstart``): ``save_dir`` saves the frozen executor (after its play SFT) and the policy =
the curator (after its SFT) right after those stages; ``load_dir`` skips both SFT stages and
starts from them (fresh optimiser state). Precedence: a checkpoint in the workdir (resume) >
``load_dir`` > a warm start this run saved > running the SFT stages. Without ``save_dir`` the
SFT result is saved in ``<workdir>/warmstart/`` (``warmstart.in_workdir``). A run with no
checkpoint whose workdir already saved a warm start (``save_dir`` or ``<workdir>/warmstart/``,
same SFT config: ``methods.common.warmstart.plan``; e.g. a crash in RL step 0, an interrupted
``steps = 0`` arm) reloads it instead of re-running the SFT, so the arms that loaded it stay
paired with it.
``steps = 0`` runs no RL: straight to evaluation (the SFT-only arm).

Skills (issue 22): ``init_skills`` (a folder of SKILL.md folders) is the repo every rollout
starts from, in training and in the ``curated`` evaluation (``rollout.new_repo``; empty
without it, the paper). ``skills/`` is the best repo of the last committed step through the
Agent Skills export gate (``skills.spec.export_repo_state``) with run provenance (method, run
id = the workdir's name, step), written at every checkpoint and at the end.

Outputs under ``workdir``: ``config.json``, ``metrics.jsonl``, ``metrics.png``,
``eval.json`` (and ``eval.jsonl`` with ``eval.every``), ``eval/<condition>__<split>.jsonl``
(one record per game), ``eval_repos/<split>/g<k>/`` (the repo curated online in each held-out
group), ``sft_curator.jsonl`` (warm-start transcripts), ``skills/<name>/SKILL.md`` (the
highest-reward repo of the last step), ``frozen/executor/``, ``checkpoints/``.

Several processes (issue 21, ``skillax.distributed``): every process draws the same groups, runs
its contiguous block of them (``collectives.share``) on its own environment pool with its own
sampler replica and the sampling keys of the 1-process run (``rollout_step(offset=...,
group_sizes=...)``: every rollout keyed on its row in the 1-process call), and the step's rollouts -- records and repo contents -- are
all-gathered to every process in group order (``rollout.gather_rollouts``). Every process then
scores all rollouts (the content judge, when on, runs on every process over the same repos),
checks by digest that the rewards and repos agree (a DistributedError on every process when
not), and builds the same training batch (``engine.train``'s global scope, digest-checked
there). The executor's request counts are summed over processes (``executor/calls`` is the sum
of every process's batched calls, so it exceeds the 1-process count); the RL stop is decided by
all (any process's clock stops the run). The held-out evaluation is split the same way
(:mod:`~skillax.methods.skillos.evaluate`). Process 0 writes the run's files (metrics,
``eval*.json*``, ``eval/``, ``eval_repos/``, ``skills/``, ``sft_curator.jsonl``, plots); each
process keeps its throw-away repos in its own folder (``rollouts/``, ``rollouts-p<i>/``); the
checkpoint is orbax's multi-process save, its host payload checked equal on every process.
Resume from a checkpoint works as with one process (``frozen/executor`` is saved and restored
by every process). A shared warm start (``warmstart.save_dir`` / ``load_dir``, or one saved in
the workdir) is not built for several processes yet: its frozen executor is a per-process
sampler replica there, and :func:`warm_start` raises NotImplementedError before any SFT or
training (run the SFT arm with one process; issue 21). With the same seed a 2-process run gives the
1-process run's metrics, repos, eval records and (up to fp32 summation order) parameters.
"""
from __future__ import annotations

import collections
import contextlib
import json
import pathlib
import shutil
import time

import numpy as np

from skillax import collectives, process
from skillax.compile_cache import compile_timer
from skillax.device_memory import peak_memory_metrics
from skillax.agents.agent_loop import PlayConfig
from skillax.agents.envs import env_spec
from skillax.agents.envs.runner import EnvPool, resolve_workers
from skillax.methods.common import host_state, run_dir
from skillax.methods.common import warmstart as ws_lib
from skillax.methods.common.clock import RLClock, next_step_estimate
from skillax.methods.common.endpoint import openai_worker
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.eval_io import eval_splits, write_condition
from skillax.methods.common.play import play_overlap
from skillax.methods.common.rows import build_batch
from skillax.methods.skillos import evaluate as eval_lib
from skillax.methods.skillos import objectives as obj_lib
from skillax.methods.skillos import rewards
from skillax.methods.skillos.config import EXECUTOR_KINDS, JUDGE_KINDS, SFT_TEACHERS, ablation_labels, check_settings
from skillax.methods.skillos.executor import Executor, PolicyChat, WorkerChat
from skillax.methods.skillos.groups import GroupStream, make_groups
from skillax.methods.skillos.rollout import (OP_KINDS, RolloutConfig, gather_rollouts, rollout_step,
                                             rollouts_bytes, score_rollouts)
from skillax.methods.skillos.tasks import env_name, load_tasks
from skillax.rl.metrics import MetricsWriter
from skillax.skills.evidence import EvidenceConfig
from skillax.skills.importing import read_skills_dir
from skillax.skills.spec import export_repo_state, provenance


def play_config(cfg) -> PlayConfig:
    p = cfg.play
    return PlayConfig(history_k=int(p.history_k), max_admissible=int(p.max_admissible),
                      max_obs_chars=int(p.max_obs_chars), max_skill_chars=int(p.max_skill_chars),
                      max_skills=int(p.max_skills), require_think=bool(p.require_think),
                      invalid_penalty=float(p.invalid_penalty), max_action_chars=int(p.max_action_chars),
                      think=bool(p.get("think", True)))


def rollout_config(cfg) -> RolloutConfig:
    r = cfg.rollout
    return RolloutConfig(top_k=int(r.top_k), retrieval_fields=tuple(f.strip() for f in r.retrieval_fields.split(",")),
                         curator_tokens=int(r.curator_tokens), curator_prefix=str(r.curator_prefix),
                         max_prompt_tokens=int(r.max_prompt_tokens),
                         evidence=EvidenceConfig(units_per_chunk=1, max_steps=int(r.evidence_steps),
                                                 max_traj_chars=int(r.evidence_chars)),
                         max_skill_chars=int(r.max_skill_chars),
                         init_skills=read_skills_dir(cfg.init_skills) if cfg.get("init_skills") else None,
                         repo_token_budget=int(r.get("repo_token_budget", 0)))


def make_executor(cfg, engine, frozen_params) -> Executor:
    """The frozen π_L: a frozen copy of the initial policy, or an OpenAI-compatible endpoint."""
    e = cfg.executor
    if e.kind == "policy":
        backend = PolicyChat(engine.policy_sampler(float(e.temperature), frozen_params=frozen_params),
                             max_len=int(cfg.model.max_len))
    elif e.kind == "openai":
        backend = WorkerChat(openai_worker(e.openai, "executor"), float(e.temperature))
    else:
        raise ValueError(f"executor.kind must be one of {EXECUTOR_KINDS}, got {e.kind!r}")
    return Executor(backend, play_config(cfg), action_tokens=int(e.action_tokens),
                    max_steps=int(cfg.env.max_steps), self_judge=str(e.self_judge),
                    judge_tokens=int(e.judge_tokens), overlap=play_overlap(e.get("overlap", 1)))


def make_judge(cfg, engine, frozen_params):
    """ContentJudge for r_cnt, or None (``judge.kind = "off"``, or ``reward.cnt = 0``: the
    "w/o r_cnt" ablation builds and calls no judge)."""
    j = cfg.judge
    if j.kind == "off" or float(cfg.reward.cnt) == 0:
        return None
    from skillax.agents.judges import ContentJudge

    if j.kind == "openai":
        worker = openai_worker(j.openai, "judge")
    elif j.kind == "policy":
        from skillax.agents.workers.local import LocalWorker
        from skillax.engine.sampler import make_generate_fn

        worker = LocalWorker(engine.tokenizer, make_generate_fn(engine.sampler, frozen_params, seed=int(cfg.seed)),
                             max_prompt_tokens=int(cfg.model.max_len) - int(j.max_tokens))
    else:
        raise ValueError(f"judge.kind must be one of {JUDGE_KINDS}, got {j.kind!r}")
    return ContentJudge(worker, max_retries=int(j.max_retries), scale=int(j.scale), max_tokens=int(j.max_tokens))


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

        alfworld_experts(list(tasks), n_workers=max(1, resolve_workers(cfg.env.workers)))


def play_family_tasks(tasks, families: str) -> list:
    """The tasks whose ``family`` (task type) is one of the comma-separated ``families``
    (``sft.play_families``; "" or blank = all tasks, in their order). Raises ValueError naming
    any family no task has (a typo would otherwise give an empty or silently full SFT set)."""
    wanted = [f.strip() for f in str(families).split(",") if f.strip()]
    if not wanted:
        return list(tasks)
    known = sorted({t.family for t in tasks})
    bad = [f for f in wanted if f not in known]
    if bad:
        raise ValueError(f"sft.play_families: no train task of type(s) {bad}; the split has {known}")
    return [t for t in tasks if t.family in set(wanted)]


def executor_warmstart(cfg, engine, pool) -> dict:
    """Play-format SFT of the executor (``sft.play_steps`` updates at ``sft.play_lr``, rows of
    ``sft.play_max_len``) on expert replays of ``sft.play_tasks`` train games (0 = all) spread
    over the task types, replayed on ``pool``, with skills in context for
    ``sft.play_skill_fraction`` of the episodes (:mod:`~skillax.methods.skillos.executor_sft`).
    Returns replay, skill and token statistics (``fits_inference_budget``: the longest row fits
    ``model.max_len - executor.action_tokens``) and the SFT's NLL first/last."""
    from skillax.methods.skillos import executor_sft
    from skillax.tokenizers.chat import render_with_masks

    name = env_name(cfg.env)
    if name == "reasoning":
        raise ValueError("sft.play_steps needs a play environment (alfworld / textworld), not reasoning")
    if bool(cfg.sft.get("play_contrast", False)) and not bool(cfg.sft.get("play_search", False)):
        raise ValueError("sft.play_contrast needs sft.play_search (the searching expert's episodes)")
    train_tasks = play_family_tasks(load_tasks(cfg.env, cfg.env.train_split, int(cfg.env.n_train_tasks) or None),
                                    str(cfg.sft.get("play_families", "")))
    n = int(cfg.sft.play_tasks)
    tasks = spread(train_tasks, n if n > 0 else len(train_tasks))
    fill_expert_cache(cfg, tasks)
    pc = play_config(cfg)
    max_steps = int(cfg.env.max_steps)
    tok = engine.tokenizer
    max_len = min(int(cfg.sft.play_max_len), int(cfg.model.max_len))
    budget = int(cfg.model.max_len) - int(cfg.executor.action_tokens)
    if bool(cfg.sft.get("play_search", False)):
        if name != "alfworld":
            raise ValueError(f"sft.play_search needs ALFWorld (the searching expert's games), not {name}")
        transcripts, stats = executor_sft.search_transcripts(
            tasks, pool, pc, max_steps,
            float(cfg.sft.get("play_skill_fraction", 0.0)), float(cfg.sft.get("play_relevant_share", 0.5)),
            int(cfg.sft.get("play_skill_games", 3)), int(cfg.seed), lambda m: len(render_with_masks(tok, m)[0]),
            max_len, contrast=bool(cfg.sft.get("play_contrast", False)))
    else:
        transcripts, stats = _planner_transcripts(cfg, name, tasks, pool, pc, max_steps, tok, max_len)
    stats = {**stats, "inference_budget": budget, "fits_inference_budget": stats["max_tokens"] <= budget,
             "task_types": dict(sorted(collections.Counter(t.family for t in tasks).items()))}
    if not transcripts:
        return {"skipped": "no expert demonstrations", **stats}
    pcfg = cfg.copy_and_resolve_references()
    pcfg.sft.steps, pcfg.sft.lr, pcfg.sft.max_len = int(cfg.sft.play_steps), float(cfg.sft.play_lr), max_len
    return {**stats, **sft_on_transcripts(engine, pcfg, transcripts)}


def _planner_transcripts(cfg, name, tasks, pool, pc, max_steps, tok, max_len):
    """Planner replays of environment ``name`` with skills for a share of the episodes (``executor_sft``)."""
    from skillax.methods.skillos import executor_sft
    from skillax.tokenizers.chat import render_with_masks

    episodes, stats = executor_sft.replay_episodes(tasks, env_spec(name, max_steps=max_steps), pc, max_steps,
                                                   pool=pool)
    assignment = executor_sft.assign_skills(
        episodes, float(cfg.sft.get("play_skill_fraction", 0.0)), float(cfg.sft.get("play_relevant_share", 0.5)),
        int(cfg.sft.get("play_skill_games", 3)), pc.max_skills, int(cfg.seed))
    transcripts, st = executor_sft.build_transcripts(episodes, assignment, pc,
                                                     lambda m: len(render_with_masks(tok, m)[0]), max_len)
    return transcripts, {**stats, **st}


def make_pool(cfg) -> EnvPool:
    name = env_name(cfg.env)
    kwargs = {} if name == "reasoning" else {"max_steps": int(cfg.env.max_steps)}
    return EnvPool(env_spec(name, **kwargs), n_workers=resolve_workers(cfg.env.workers),
                   max_steps=None if name == "reasoning" else int(cfg.env.max_steps))


def step_metrics(rolls, info: dict, gens, batch, adv, times: dict, executor_stats: dict) -> dict:
    """One metrics line: r and each term, task outcomes, ops by kind, repo size, sizes, times.
    The repo budget's: repo_tokens = mean over rollouts of the final repo's size in tokens
    (|S| of r_comp), calls_over_budget = calls refused by ``rollout.repo_token_budget`` (also
    in calls_invalid)."""
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
         "calls_over_budget": sum(r.over_budget_calls() for r in rolls),
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
        raise ValueError(f"sft.teacher must be one of {SFT_TEACHERS}, got {cfg.sft.teacher!r}")
    path = workdir / "sft_curator.jsonl"
    if process.is_writer():
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


def rollout_root(workdir: pathlib.Path) -> pathlib.Path:
    """This process's folder of throw-away rollout repos: ``<workdir>/rollouts/`` (process 0)
    or ``<workdir>/rollouts-p<i>/`` (process i of several: the processes may share the workdir)."""
    i = process.index()
    return pathlib.Path(workdir) / ("rollouts" if i == 0 else f"rollouts-p{i}")


def executor_stats(stats: collections.Counter) -> dict:
    """This step's executor counters, summed over the processes (one process: as they are)."""
    total: collections.Counter = collections.Counter()
    for part in collectives.allgather_objects(dict(stats)):
        total.update(part)
    return dict(total)


def export_repo(state: dict, folder: pathlib.Path, *, run_id: str | None = None, step: int | None = None) -> int:
    """Write a repo ``state()`` as ``folder/<name>/SKILL.md`` through the Agent Skills export
    gate with SkillOS provenance (``step``: the RL step it comes from; None / < 0 = left out).
    Folders of the previous export that are gone are removed; returns the skills written
    (several processes: process 0 writes; the others return the state's skill count)."""
    if not process.is_writer():
        return len(state.get("skills", {}))
    prov = provenance("skillos", run_id=run_id, step=step if step is not None and step >= 0 else None)
    return len(export_repo_state(state, folder, provenance=prov).written)


def save_frozen(engine, name: str, tree) -> None:
    """Persist ``tree`` as the workdir's frozen copy ``name``: where
    ``engine.persistent_frozen(name, reuse=True)`` reads it on resume (``<workdir>/frozen/<name>/``,
    the engine's layout; a warm start's executor must survive a resume like one made here)."""
    from skillax.rl.checkpoint import Checkpointer

    folder = pathlib.Path(engine.workdir) / "frozen" / name
    if process.is_writer():
        shutil.rmtree(folder, ignore_errors=True)
    collectives.barrier(f"frozen-{name}-cleared")
    with Checkpointer(folder, max_to_keep=1) as ck:   # several processes: every one saves its shards
        ck.save(0, tree, {"name": name})


def warm_start(cfg, engine, pool, groups, workdir: pathlib.Path) -> tuple[object, dict]:
    """The frozen executor's weights and what the warm start did (module docstring).

    Resume (a checkpoint and ``frozen/executor`` in the workdir) > ``warmstart.load_dir`` >
    a warm start this run saved (``save_dir``, else ``<workdir>/warmstart/``:
    ``methods.common.warmstart.plan``) > the SFT stages (then saved there). After it the engine
    holds the curator's weights (a resume then restores the checkpoint over them)."""
    if engine.has_checkpoint() and engine.has_frozen("executor"):
        return engine.persistent_frozen("executor", reuse=True), {"source": "resume"}
    src, save_ws, how = ws_lib.plan(cfg, workdir)
    will_save = save_ws is not None and (bool(cfg.warmstart.get("save_dir")) or int(cfg.sft.get("play_steps", 0)) > 0
                                         or int(cfg.sft.steps) > 0)
    if process.count() > 1 and (src is not None or will_save):
        raise NotImplementedError(
            f"a SkillOS warm start ({'loading ' + str(src.dir) if src is not None else 'saving ' + str(save_ws.dir)}) "
            f"with {process.count()} processes is not built yet (issue 21: its frozen executor is a per-process "
            "sampler replica). Run the SFT / warm-start arm with one process (--config.distributed.enabled=false) "
            "and resume RL from its checkpoint, or run without warmstart.save_dir / load_dir.")
    if src is not None:
        saved, _, summary = src.load(engine)
        if "executor" not in saved:
            raise ws_lib.WarmStartError(f"warm start {src.dir} has no frozen executor (not a SkillOS warm start)")
        save_frozen(engine, "executor", saved["executor"])
        print(f"warm start loaded from {src.dir}: executor and curator SFT skipped")
        return saved["executor"], {"source": f"loaded {src.dir}", "saved_summary": summary, "own": how == "own"}
    info: dict = {"source": "sft"}
    if int(cfg.sft.get("play_steps", 0)) > 0:      # before the frozen copy
        info["executor_sft"] = executor_warmstart(cfg, engine, pool)
        print("executor play SFT warm start:", json.dumps(info["executor_sft"]))
    frozen = engine.persistent_frozen("executor", reuse=False)
    if int(cfg.sft.steps) > 0 and not engine.has_checkpoint():
        info["curator_sft"] = curator_sft(engine, cfg, groups, workdir, make_executor(cfg, engine, frozen))
        print("curator SFT warm start:", json.dumps(info["curator_sft"]))
    sft_ran = "executor_sft" in info or "curator_sft" in info
    if not engine.has_checkpoint() and ws_lib.worth_saving(save_ws, cfg, sft_ran):
        save_ws.save(engine, frozen={"executor": frozen}, summary=info, owner=ws_lib.owner(cfg, workdir))
        print(f"warm start saved to {save_ws.dir}")
    return frozen, info


def run(cfg, workdir=None):
    """Train, evaluate and export (module docstring). The env pool's worker processes and
    the checkpointer are closed also when a step raises."""
    with contextlib.ExitStack() as cleanup:
        return _run(cfg, workdir, cleanup)


def _run(cfg, workdir, cleanup: contextlib.ExitStack):
    workdir = pathlib.Path(workdir or "runs/skillos")
    run_dir.prepare(cfg, workdir)   # a resume with a config that changes the run's meaning fails here
    if abs(float(cfg.rl.temperature) - float(cfg.temperature)) > 1e-9:
        raise ValueError(f"rl.temperature ({cfg.rl.temperature}) must equal the curator's rollout "
                         f"temperature ({cfg.temperature}): the trainer scores that distribution (PITFALLS 6)")
    if int(cfg.tasks_per_group) < 2 or int(cfg.min_group_tasks) < 2:
        raise ValueError("tasks_per_group and min_group_tasks must be >= 2: r_task scores the tasks that "
                         "ran after the first curation")
    check_settings(cfg)
    labels = ablation_labels(cfg)
    conds = eval_lib.conditions(cfg.eval, bool(cfg.warmstart.get("load_dir")))   # bad names fail before SFT
    handwritten = eval_lib.load_handwritten(cfg.eval.handwritten_dir) if "handwritten" in conds else None
    engine = PolicyEngine.create(cfg, workdir)
    cleanup.callback(engine.close)
    pool = make_pool(cfg)
    cleanup.callback(pool.close)
    weights = rewards.RewardWeights(float(cfg.reward.fc), float(cfg.reward.cnt), float(cfg.reward.comp))
    fc_no_calls = float(cfg.reward.get("fc_no_calls", 1.0))
    train_tasks = load_tasks(cfg.env, cfg.env.train_split, int(cfg.env.n_train_tasks) or None)
    groups = make_groups(train_tasks, int(cfg.tasks_per_group), grouping=str(cfg.grouping), seed=int(cfg.seed),
                         min_size=int(cfg.min_group_tasks))
    frozen, ws_info = warm_start(cfg, engine, pool, groups, workdir)
    executor = make_executor(cfg, engine, frozen)
    judge = make_judge(cfg, engine, frozen)
    stream = GroupStream(groups, seed=int(cfg.seed))
    objectives = obj_lib.objective_configs(cfg.rl)
    rcfg = rollout_config(cfg)
    if rcfg.init_skills is not None:
        print(f"init_skills: {rcfg.init_skills.summary()}; every rollout's repo starts with them")
    tok = engine.tokenizer
    count_tokens = lambda s: len(tok.encode(s, add_special_tokens=False))  # noqa: E731
    print(f"skillos: {len(train_tasks)} train tasks -> {len(groups)} groups ({cfg.grouping}); "
          f"{cfg.groups_per_step} groups x {cfg.group_size} rollouts per step"
          + (f"; ablations: {', '.join(labels)}" if labels else ""))

    start, host, _ = engine.restore()
    if process.is_writer():
        host_state.truncate_jsonl(workdir / "eval.jsonl", start)   # evaluations after the checkpoint run again
    rollout_root_dir = rollout_root(workdir)
    shutil.rmtree(rollout_root_dir, ignore_errors=True)     # a dead run's repos (every rollout starts empty)
    best_state = None
    if host is not None:
        stream.set_state(host["stream"])
        best_state = host.get("best_repo")
        print(f"resumed from checkpoint: next step {start}")
    rl_steps = start
    curator = engine.policy_sampler(float(cfg.temperature))
    writer = MetricsWriter(workdir / "metrics.jsonl", total_steps=int(cfg.steps), initial_step=start,
                           bar_keys=("r", "r_task", "r_fc", "repo_skills"))
    clock = RLClock.from_config(cfg).start()
    compile_s = compile_timer()
    try:
        for step in range(start, int(cfg.steps)):
            t0, c0 = time.perf_counter(), compile_s()
            timings: collections.Counter = collections.Counter()
            executor.stats.clear()
            step_groups = stream.take(int(cfg.groups_per_step))
            lo, hi = collectives.share(len(step_groups))     # this process's block (all: one process)
            mine = rollout_step(step_groups[lo:hi], int(cfg.group_size), curator, executor, pool, rollout_root_dir,
                                rcfg, step=step, timings=timings, offset=lo,
                                group_sizes=[len(g) for g in step_groups])
            rolls = gather_rollouts(mine, rollout_root_dir)  # every process's, in group order
            info = score_rollouts(rolls, count_tokens, judge, weights, fc_no_calls)
            if process.count() > 1:
                collectives.agree(f"the rollouts' rewards and repos of step {step}", rollouts_bytes(rolls))
            gens, rows, adv = obj_lib.training_rows(rolls)
            batch = build_batch(gens, rows, list(objectives), length_buckets=tuple(cfg.train.length_buckets),
                                rows_multiple=int(cfg.train.micro_batch), drop_truncated=bool(cfg.rl.drop_truncated),
                                pad_id=int(tok.pad_token_id or 0))
            t_roll = time.perf_counter() - t0
            train_metrics = engine.train(batch, objectives)
            times = {"time/rollout_s": t_roll, "time/executor_s": timings["executor_s"],
                     "time/curator_s": timings["curator_s"], "time/retrieve_s": timings["retrieve_s"],
                     "time/judge_s": info["judge_s"], "time/update_s": train_metrics.pop("time/update_s", 0.0),
                     "time/step_s": time.perf_counter() - t0, "time/compile_s": compile_s() - c0}
            times.update(peak_memory_metrics())
            m = step_metrics(rolls, info, gens, batch, adv, times, executor_stats(executor.stats))
            m["ablations"] = ",".join(labels)
            m["rl_minutes"] = clock.elapsed_s / 60.0
            m.update(train_metrics)
            writer.write(step, m)
            rl_steps = step + 1
            best = max(rolls, key=lambda r: (r.r, -r.index))
            best_state = best.repo.state()
            # every process stops at the same step
            stop = collectives.first_reason(clock.stop_reason(
                next_step_estimate(time.perf_counter() - t0, compile_s() - c0)))
            if (step + 1) % int(cfg.checkpoint_every) == 0 or step + 1 == int(cfg.steps) or stop:
                engine.save(step, {"stream": stream.get_state(), "best_repo": best_state,
                                   "repos": {f"g{r.group}-n{r.n}": r.repo.state() for r in rolls}})
                export_repo(best_state, workdir / "skills", run_id=workdir.name, step=step)  # last committed
            if stop:
                print(f"{stop}; stopping RL after step {step} (re-run to resume)")
                break
            if conds and int(cfg.eval.every) and (step + 1) % int(cfg.eval.every) == 0 and step + 1 < int(cfg.steps):
                res = run_eval(cfg, engine, executor, pool, workdir, conds, handwritten, final=False,
                               labels=labels, rl_steps=rl_steps, warm=ws_info)
                if process.is_writer():
                    with open(workdir / "eval.jsonl", "a", encoding="utf-8") as f:
                        f.write(json.dumps({"step": step, **res}) + "\n")
    finally:
        writer.close()

    results = run_eval(cfg, engine, executor, pool, workdir, conds, handwritten, labels=labels,
                       rl_steps=rl_steps, warm=ws_info) if conds else {}
    if results and process.is_writer():
        (workdir / "eval.json").write_text(json.dumps(results, indent=2))
    if results:
        print("eval:", json.dumps({c: {s: (v["success"], v["success_after_first"]) for s, v in d.items()}
                                   for c, d in results["conditions"].items()}))
    if best_state is not None:
        n = export_repo(best_state, workdir / "skills", run_id=workdir.name, step=rl_steps - 1)
        print(f"curated repo (best rollout of the last step): {n} skills in {workdir / 'skills'}")
    shutil.rmtree(rollout_root_dir, ignore_errors=True)
    if (workdir / "metrics.jsonl").exists():
        try:
            from skillax.rl.plot import plot

            plot(workdir / "metrics.jsonl", workdir / "metrics.png",
                 keys=["r", "r_task", "r_fc", "r_comp", "repo_skills", "curate/loss"])
        except Exception as e:  # plotting must never fail a finished run
            print(f"plot skipped: {e}")
    return results


def run_eval(cfg, engine, executor, pool, workdir: pathlib.Path, conds, handwritten=None, *, final: bool = True,
             labels=(), rl_steps: int = 0, warm: dict | None = None) -> dict:
    """Every condition on every split of ``eval_splits(cfg)`` (:mod:`~skillax.methods.skillos.evaluate`).

    ``final``: write the per-game records (``eval/<condition>__<split>.jsonl``, via
    ``write_condition``) and the curated repos (``eval_repos/``); periodic evaluations
    (``eval.every``) only return summaries. Returns the ``eval.json`` content: ``conditions``
    {condition: {split: summary + success_after_first}}, ``repo`` {split: curated repo
    statistics}, ``n_groups`` / ``n_games`` per split, ``ablations``, ``rl_steps``,
    ``curator`` ("rl" after RL steps, else "sft" / "untrained"), ``seconds``."""
    splits = {}
    for s in eval_splits(cfg):
        tasks = load_tasks(cfg.env, s, int(cfg.env.n_eval_tasks) or None)
        splits[s] = eval_lib.eval_groups(tasks, int(cfg.tasks_per_group), str(cfg.grouping), int(cfg.seed),
                                         int(cfg.eval.n_groups))
    t0 = time.perf_counter()
    records, repo = eval_lib.evaluate(
        splits, conds, engine.policy_sampler(float(cfg.eval.temperature)), executor, pool, rollout_root(workdir),
        rollout_config(cfg), batch_size=int(cfg.eval.get("batch_size", 0)), handwritten=handwritten,
        repo_dir=(workdir / "eval_repos") if final else None, keep_actions=bool(cfg.eval.get("keep_actions", False)))
    out_conds: dict = {}
    for (c, s), recs in records.items():
        summ = eval_lib.condition_summary(recs)
        if final:
            summ = {**write_condition(workdir, c, s, recs), **{k: summ[k] for k in ("success_after_first",
                                                                                  "n_after_first")}}
        out_conds.setdefault(c, {})[s] = summ
    warm = warm or {}
    sft_done = bool(warm.get("curator_sft")) or str(warm.get("source", "")).startswith("loaded")
    return {"conditions": out_conds, "repo": repo, "ablations": list(labels), "rl_steps": int(rl_steps),
            "curator": "rl" if rl_steps > 0 else ("sft" if sft_done or int(cfg.sft.steps) > 0 else "untrained"),
            "warm_start": str(warm.get("source", "")),
            "n_groups": {s: len(g) for s, g in splits.items()},
            "n_games": {s: sum(len(x) for x in g) for s, g in splits.items()},
            "seconds": time.perf_counter() - t0}
