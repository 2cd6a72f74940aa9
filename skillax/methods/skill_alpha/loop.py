"""The Skill-alpha training loop (see the package docstring for the algorithm box and for
what runs where with several processes)."""

from __future__ import annotations

import collections
import dataclasses
import json
import pathlib
import time

import numpy as np

from skillax import collectives, process
from skillax.compile_cache import compile_timer
from skillax.device_memory import peak_memory_metrics
from skillax.agents.envs.runner import resolve_workers
from skillax.methods.common import host_state, run_dir
from skillax.methods.common import warmstart as warmstart_lib
from skillax.methods.common.clock import RLClock, next_step_estimate
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.eval_io import eval_splits
from skillax.methods.common.rows import build_batch
from skillax.methods.skill_alpha import objectives as obj_lib
from skillax.methods.skill_alpha import setting as setting_lib
from skillax.methods.skill_alpha import warm
from skillax.methods.skill_alpha.evaluate import eval_conditions, evaluate_conditions, evaluate_skill
from skillax.methods.skill_alpha.handwritten import handwritten_skill
from skillax.methods.skill_alpha.inference import action_histogram, infer, write_skill_folder
from skillax.methods.skill_alpha.prompts import skill_context
from skillax.methods.skill_alpha.action_space import is_budget_rejection, skill_tokens
from skillax.methods.skill_alpha.unit import UnitConfig, UnitInput, run_units
from skillax.skills.budget import token_counter
from skillax.rl.metrics import MetricsWriter
from skillax.skills.edits import ACTIONS
from skillax.skills.rules import rules_of
from skillax.skills.skill_md import SkillDoc, parse_skill_md, render_skill_md
from skillax.skills.spec import provenance


@dataclasses.dataclass
class Lane:
    """One skill being edited along the stream: z_{t-1}, the next chunk, and the pass number.
    Lane i starts at chunk ``i * T // lanes``; at the end of the stream it restarts from z_0."""

    index: int
    position: int
    epoch: int
    skill: SkillDoc

    def advance(self, new_skill: SkillDoc, n_items: int, z0: SkillDoc) -> None:
        self.position += 1
        self.skill = new_skill
        if self.position >= n_items:
            self.position, self.epoch, self.skill = 0, self.epoch + 1, z0

    def to_host(self) -> dict:
        return {"index": self.index, "position": self.position, "epoch": self.epoch,
                "skill": render_skill_md(self.skill)}

    @classmethod
    def from_host(cls, d: dict) -> "Lane":
        return cls(int(d["index"]), int(d["position"]), int(d["epoch"]), parse_skill_md(d["skill"]))


def unit_config(cfg) -> UnitConfig:
    u = cfg.unit
    budget = min(int(cfg.evidence.max_prompt_tokens), int(cfg.model.max_len) - int(u.max_new_tokens))
    return UnitConfig(group_size=int(u.group_size), anchors_k=int(u.anchors_k), graded=bool(u.graded),
                      carry=str(u.carry), max_new_tokens=int(u.max_new_tokens), max_prompt_tokens=budget,
                      temperature=float(cfg.rl.temperature), dedupe=bool(u.dedupe), prefix=str(u.get("prefill", "")),
                      actions=u.get("actions") or (), reward=str(u.get("reward", "rollback")),
                      token_budget=int(cfg.skill.get("token_budget", 0)))


def step_metrics(results, times: dict, count_tokens=None) -> dict:
    """Per-step metrics: rollback reward, action mix, valid rate, r_ctrl, skips, budgets.
    The skill budget's: skill_tokens = mean over units of the carried z_t's size in tokens
    (what the worker reads; ``action_space.skill_tokens`` with ``count_tokens``, None = the
    ``skills.budget`` fallback), budget_rejections = candidates made invalid by
    ``skill.token_budget`` (also in action/invalid)."""
    live = [r for r in results if not r.skipped]
    cands = [c for r in live for c in r.candidates]
    n = max(len(cands), 1)
    m = {"reward/mean": float(np.mean([c.reward for c in cands])) if cands else 0.0,
         "units": len(results), "units_skipped": len(results) - len(live),
         "valid_rate": sum(c.valid for c in cands) / n,
         "parse_fail_rate": sum(c.edit.action is None for c in cands) / n}
    for a in ACTIONS:
        m[f"action/{a}"] = sum(c.valid and c.action == a for c in cands) / n
    m["action/invalid"] = sum(not c.valid for c in cands) / n
    m["budget_rejections"] = sum(is_budget_rejection(c.edit) for r in results for c in r.candidates)
    m["skill_tokens"] = float(np.mean([skill_tokens(r.carry, count_tokens) for r in results
                                       if r.carry is not None] or [0.0]))
    m["r_ctrl"] = float(np.mean([r.r_ctrl for r in live])) if live else 0.0
    edits = [c for c in cands if c.valid and c.action != "NOOP"]
    m["r_edit"] = float(np.mean([c.r_edit for c in edits])) if edits else 0.0
    m["edit_beats_ctrl"] = sum(c.r_edit > r.r_ctrl + 1e-9 for r in live for c in r.candidates
                               if c.valid and c.action != "NOOP") / max(len(edits), 1)
    # the reward's signal (issue 18): edits that lost a game the control won, and the share of
    # units whose G rewards differ at all (a zero-variance unit has advantage 0 everywhere)
    m["edit_below_ctrl"] = sum(c.r_edit < r.r_ctrl - 1e-9 for r in live for c in r.candidates
                               if c.valid and c.action != "NOOP") / max(len(edits), 1)
    n_var = sum(max(r.rewards) - min(r.rewards) > 1e-9 for r in live if r.candidates)
    m["units_with_variance"] = n_var / max(len(live), 1)
    m["zero_variance_units"] = len(live) - n_var          # the learning summary's curve key
    m["reward/std_within"] = float(np.mean([np.std(r.rewards) for r in live if r.candidates])) if live else 0.0
    m["carried_edits"] = sum(r.carry_index is not None for r in live)
    m["worker_jobs"] = sum(r.worker_jobs for r in results)
    m["prompt_tokens"] = float(np.mean([r.prompt_tokens for r in results]))
    m["response_tokens"] = float(np.mean([len(c.generation.completion_ids) for r in results for c in r.candidates
                                          if c.generation is not None] or [0]))
    trunc = collections.Counter()
    for r in results:
        trunc.update(r.truncations)
    for k in ("units_dropped", "prompt"):
        m[f"trunc/{k}"] = trunc.get(k, 0)
    m.update(times)
    return m


def unit_sample(step: int, res) -> dict:
    """One unit's candidates for ``samples.jsonl`` (text, action, validity, reason, scores)."""
    return {"step": step, "lane": res.input.lane, "chunk": res.input.position, "family": res.input.family,
            "skipped": res.skipped, "r_ctrl": res.r_ctrl, "carry": res.carry_index,
            "candidates": [{"text": c.text, "action": c.action, "valid": c.valid, "reason": c.edit.reason,
                            "r_edit": c.r_edit, "reward": c.reward} for c in res.candidates]}


def units_bytes(results, lanes) -> bytes:
    """A canonical byte string of a step's outcome -- every candidate's text, validity and
    rewards, each unit's control score, skip reason and carry, and the lanes after the step
    (``Lane.to_host``): what every process must hold the same of (``collectives.agree``)."""
    return json.dumps([[[r.input.lane, r.input.position, r.r_ctrl, r.skipped, r.carry_index,
                         [[c.text, c.valid, c.r_edit, c.reward] for c in r.candidates]] for r in results],
                       [lane.to_host() for lane in lanes]], sort_keys=True).encode()


def check_processes(cfg) -> None:
    """With several processes (issue 21): NotImplementedError, on every process before any
    model loads, for what is not built for them -- the document and reasoning settings (their
    scorers' worker and judge calls are not split across processes; experience's
    ``anchors.EnvScorer`` is) and ``stage = "sft_data"`` (a one-process data export)."""
    if process.count() == 1:
        return
    if cfg.setting != "experience":
        raise NotImplementedError(
            f"skill_alpha setting={cfg.setting!r} with {process.count()} processes is not built yet (issue 21: "
            "only the experience setting's game scorer splits its worker runs across processes). Run it with "
            "one process (--config.distributed.enabled=false).")
    if cfg.stage == "sft_data":
        raise NotImplementedError(f"skill_alpha stage='sft_data' with {process.count()} processes: write the SFT "
                                  "data with one process (--config.distributed.enabled=false)")


def check_warm_start(cfg, src, save_ws) -> None:
    """With several processes and no checkpoint to resume: NotImplementedError, before any SFT
    or training, when the run would run an SFT stage (``sft.play_steps`` / ``sft.steps`` with
    no warm start to load) or save a warm start (``warmstart.save_dir``): the frozen worker is
    a per-process sampler replica there (``methods.common.warmstart.WarmStart.save`` refuses
    it; SkillOS refuses the same). Loading one (``load_dir``, or the run's own) works."""
    if src is not None:
        return
    sft = (int(cfg.sft.play_steps) > 0 and cfg.setting == "experience") or int(cfg.sft.steps) > 0
    saving = save_ws is not None and warmstart_lib.worth_saving(save_ws, cfg, sft)
    if sft or saving:
        what = ", ".join(x for x, on in (("the SFT stages (sft.play_steps / sft.steps)", sft),
                                         (f"saving a warm start to {save_ws.dir if save_ws else ''}", saving)) if on)
        raise NotImplementedError(
            f"a Skill-alpha warm start -- {what} -- with {process.count()} processes is not built yet (issue 21: "
            "its frozen worker is a per-process sampler replica). Run the SFT / warm-start arm with one process "
            "(--config.distributed.enabled=false), then the RL arm with warmstart.load_dir (or resume from its "
            "checkpoint), or run without SFT and without warmstart.save_dir.")


def _inputs(lanes, stream, cfg) -> list[UnitInput]:
    out = []
    for lane in lanes:
        item = stream.items[lane.position]
        anchors = stream.draw_anchors(item, int(cfg.unit.anchors_k), seed=int(cfg.seed), lane=lane.index,
                                      epoch=lane.epoch)
        out.append(UnitInput(lane.skill, item.units, anchors, item.kind, item.family, lane.index, item.index))
    return out


def _search_warmstart(cfg, pc, engine, train_tasks, records, pool) -> dict:
    """``sft.play_search``: the searching expert's transcripts with the rule document in a
    share of the episodes (:mod:`skillax.methods.skill_alpha.play_search`), then the play SFT
    on them alone; the summary holds their statistics and ``fits_inference_budget`` (the
    longest row fits ``model.max_len - worker.action_tokens``)."""
    from skillax.methods.common.sft_warmstart import play_sft_warmstart
    from skillax.methods.skill_alpha.play_search import search_play_transcripts
    from skillax.tokenizers.chat import render_with_masks

    tok = engine.tokenizer
    plans = [r.actions if r.won and not r.error else [] for r in records]
    rows, st = search_play_transcripts(
        train_tasks, plans, pool, setting_lib.play_config(cfg), int(cfg.env.max_steps),
        float(cfg.sft.get("play_skill_fraction", 0.0)), int(cfg.sft.get("play_skill_games", 3)), int(cfg.seed),
        lambda m: len(render_with_masks(tok, m)[0]), int(pc.sft.max_len),
        contrast=bool(cfg.sft.get("play_contrast", False)))
    budget = int(cfg.model.max_len) - int(cfg.worker.action_tokens)
    st = {**st, "inference_budget": budget, "fits_inference_budget": st["max_tokens"] <= budget}
    if not rows:
        return {"skipped": "no expert demonstrations", **st}
    pc.sft.n_tasks = 0                                  # no planner replays: the search rows only
    out = play_sft_warmstart(engine, pc, [], setting_lib.play_config(cfg), pool=pool, extra_transcripts=rows)
    return {**{f"search_{k}": v for k, v in st.items()}, **out}


def play_warmstart(cfg, engine) -> dict:
    """Play-format SFT on expert demonstrations (``cfg.sft.play_steps`` updates at
    ``cfg.sft.play_lr``, rows of ``sft.play_max_len`` tokens, ``sft.play_batch_size`` rows per
    step; 0 = the edit SFT's ``max_len`` / ``batch_size``) through ``methods.common.sft_warmstart``.
    A play row is one game turn (~1k tokens), so padding it to the editor's 8192 wastes compute."""
    from skillax.methods.common.sft_warmstart import play_sft_warmstart

    pc = cfg.copy_and_resolve_references()
    pc.sft.steps, pc.sft.lr = int(cfg.sft.play_steps), float(cfg.sft.play_lr)
    pc.sft.max_len = min(int(cfg.sft.get("play_max_len", 0) or cfg.sft.max_len), int(cfg.model.max_len))
    pc.sft.batch_size = int(cfg.sft.get("play_batch_size", 0) or cfg.sft.batch_size)
    from skillax.methods.common import tasks as task_lib

    env = task_lib.resolve_env(cfg.env.name)
    search = bool(cfg.sft.get("play_search", False))
    if search and env != "alfworld":
        raise ValueError(f"sft.play_search needs ALFWorld (the searching expert's games), not {env}")
    if bool(cfg.sft.get("play_contrast", False)) and not search:
        raise ValueError("sft.play_contrast needs sft.play_search (the searching expert's episodes)")
    train_tasks = setting_lib.play_sft_tasks(cfg)
    pc.sft.n_tasks = len(train_tasks)                   # already chosen (0 = all would mean none there)
    n_workers = resolve_workers(cfg.env.workers)        # -1 / "auto": the cores minus one
    records = None
    if env == "alfworld":  # fill the planner cache in parallel first
        from skillax.agents.envs.experts import alfworld_experts

        records = alfworld_experts(train_tasks, n_workers=max(1, n_workers))
    pool = None
    if n_workers > 0 or search:  # replay the experts on env.workers processes (ALFWorld resets take ~1-3 s)
        from skillax.agents.envs import env_spec
        from skillax.agents.envs.runner import EnvPool

        steps = int(cfg.env.max_steps)
        pool = EnvPool(env_spec(env, max_steps=steps), n_workers, max_steps=steps)
    try:
        if not search:
            return play_sft_warmstart(engine, pc, train_tasks, setting_lib.play_config(cfg), pool=pool)
        return _search_warmstart(cfg, pc, engine, train_tasks, records, pool)
    finally:
        if pool is not None:
            pool.close()


def _eval_tasks(cfg, st) -> dict:
    """{split: tasks} of the held-out evaluation: every game of each ``eval_splits(cfg)``
    split when ``eval.n_tasks`` = 0, else a seeded subset of that many per split."""
    n = int(cfg.eval.n_tasks)
    return {sp: setting_lib.experience_tasks(cfg, sp, n or None) for sp in eval_splits(cfg)}


def evaluate(cfg, st, z_t, workdir) -> dict:
    """The held-out evaluation after inference (``evaluate`` module): experience -> records
    per (condition, split) and ``eval.json``; document / reasoning -> means with repeats."""
    if cfg.setting != "experience":
        if not st.eval_tasks or int(cfg.eval.repeats) <= 0:
            return {}
        ev = evaluate_skill(st.scorer, st.eval_tasks, z_t, repeats=int(cfg.eval.repeats))
        print("eval:", json.dumps({k: ev[k] for k in ("with_skill", "no_skill", "delta", "n")}))
        return ev
    conds = eval_conditions(cfg, loaded_warm_start=bool(cfg.warmstart.get("load_dir")))
    if not conds:
        return {}
    skills = {}
    for c in conds:
        skills[c] = (None if c == "no_skill" else z_t if c == "with_skill"
                     else handwritten_skill(cfg.eval.handwritten_dir))
    t0 = time.perf_counter()
    out = evaluate_conditions(st.scorer, _eval_tasks(cfg, st), skills, workdir, batch_size=int(cfg.eval.batch_size))
    out["seconds"] = time.perf_counter() - t0
    out["skill_chars"] = {c: len(skill_context(s)) for c, s in skills.items()}
    if process.is_writer():
        (workdir / "eval.json").write_text(json.dumps(out, indent=2))
    print("eval:", json.dumps({k: (v["success"], v["n"]) for k, v in out["summaries"].items()}))
    return out


def run(cfg, workdir=None):
    """Skill-alpha end to end (package docstring), under the learning campaign's contract:

    * warm start (``config.warmstart``; ``warm``): a checkpoint in the workdir resumes (its
      frozen worker and lanes) and wins over everything; else ``load_dir`` skips the play
      SFT and the editor SFT and starts from the saved editor, worker and evidence stream;
      else a warm start this run saved (``save_dir`` or ``<workdir>/warmstart/``, same SFT
      config: ``methods.common.warmstart.plan``) is loaded the same way; else the SFT stages
      run and their result is saved before any RL (``save_dir``, else ``<workdir>/warmstart/``).
    * ``steps = 0``: no RL; inference with the (SFT-only) editor writes z_T, then evaluation.
    * RL stops on :class:`~skillax.methods.common.clock.RLClock` (``max_train_minutes``,
      ``train_until_unix``) with a checkpoint.
    * evaluation: :func:`evaluate` (conditions, records, ``eval.json``); z_T exported as
      ``<workdir>/skill/<name>/`` (SKILL.md + changelog).
    """
    workdir = pathlib.Path(workdir or f"runs/skill_alpha_{cfg.setting}")
    check_processes(cfg)            # several processes: what is not built fails before any model loads
    run_dir.prepare(cfg, workdir)   # a resume with a config that changes the run's meaning fails here
    engine = PolicyEngine.create(cfg, workdir)
    results: dict = {}
    local_worker = cfg.worker.kind == "frozen"
    # the worker's frozen weights are saved with the run: a resume reloads them instead of
    # re-running the (not bit-reproducible on GPU) play SFT
    resuming = engine.has_checkpoint() and (engine.has_frozen(warm.WORKER) or not local_worker)
    # without a checkpoint: load_dir, else a warm start this run saved (save_dir or
    # <workdir>/warmstart/: e.g. an SFT-only arm cut during its evaluation, a crash in RL step 0)
    # -- redoing the SFT would replace the editor and worker that other arms already loaded
    src, save_ws, how = (None, None, "resume") if resuming else warmstart_lib.plan(cfg, workdir)
    if process.count() > 1 and not resuming:
        check_warm_start(cfg, src, save_ws)
    worker_params = None
    if resuming:
        if local_worker:
            worker_params = engine.persistent_frozen(warm.WORKER, reuse=True)
    elif src is not None:
        worker_params, summary = warm.load(src, engine, workdir, need_worker=local_worker)
        results["warmstart"] = {"loaded_from": str(src.dir), "own": how == "own", "summary": summary}
        print(f"warm start loaded from {src.dir}")
    else:
        # no checkpoint, no warm start: the worker is derived again, so an evidence stream that
        # a run that died before its first checkpoint sampled from its worker is not reused
        if process.is_writer() and host_state.discard(workdir, [warm.STREAM_FILE]):
            print(f"no checkpoint: removed {warm.STREAM_FILE} of an earlier run that stopped before its first checkpoint")
        collectives.barrier("skill-alpha-stream-discarded")   # before any process looks for the cache
        if int(cfg.sft.play_steps) > 0 and cfg.setting == "experience":
            results["play_sft"] = play_warmstart(cfg, engine)   # before the worker copy
            print("play SFT:", json.dumps(results["play_sft"]))
        if local_worker:
            worker_params = engine.persistent_frozen(warm.WORKER, reuse=False)
    worker = setting_lib.build_worker(cfg, engine, params=worker_params)  # frozen, taken before any restore
    z0 = setting_lib.initial_skill(cfg)
    ucfg = unit_config(cfg)
    st = setting_lib.build_setting(cfg, worker, z0, workdir, ucfg.max_prompt_tokens)
    results["setting"] = st.info
    print(f"skill_alpha/{cfg.setting}: {json.dumps(st.info)}")
    if cfg.stage == "sft_data":
        from skillax.methods.skill_alpha.sft_data import write_sft_data

        return write_sft_data(cfg, st.stream, z0, engine.tokenizer, workdir / "sft_data.jsonl", ucfg.max_prompt_tokens)
    if cfg.stage not in ("train", "infer"):
        raise ValueError(f"stage must be 'train', 'infer' or 'sft_data', got {cfg.stage!r}")

    try:
        start, host, _ = engine.restore()
        if process.is_writer():
            host_state.truncate_jsonl(workdir / "samples.jsonl", start)   # steps after the checkpoint run again
        n_items, n_lanes = len(st.stream), int(cfg.lanes)
        if host is not None:
            lanes = [Lane.from_host(d) for d in host["lanes"]]
            print(f"resumed from checkpoint: next step {start}")
        else:
            lanes = [Lane(i, (i * n_items) // n_lanes, 0, z0) for i in range(n_lanes)]
            warm_loaded = "warmstart" in results
            if int(cfg.sft.steps) > 0 and not warm_loaded:
                from skillax.methods.skill_alpha.sft_data import edit_sft_warmstart, make_sft_data, write_sft_data

                rows, stats = make_sft_data(cfg, st.stream, z0, engine.tokenizer, ucfg.max_prompt_tokens)
                write_sft_data(cfg, st.stream, z0, engine.tokenizer, workdir / "sft_data.jsonl",
                               ucfg.max_prompt_tokens, rows, stats)
                results["edit_sft"] = edit_sft_warmstart(engine, cfg, rows)
                results["edit_sft"]["data"] = stats
                print("edit SFT:", json.dumps(results["edit_sft"]))
            sft_ran = "play_sft" in results or "edit_sft" in results
            if not warm_loaded and warmstart_lib.worth_saving(save_ws, cfg, sft_ran):
                warm.save(save_ws, engine, worker_params, workdir,
                          {k: results[k] for k in ("play_sft", "setting", "edit_sft") if k in results},
                          owner=warmstart_lib.owner(cfg, workdir))
                print(f"warm start saved to {save_ws.dir}")
        if cfg.stage == "train" and int(cfg.steps) > start:
            results["rl"] = train(cfg, engine, st, lanes, z0, ucfg, start, workdir)
        if cfg.infer.enabled:
            editor = engine.policy_sampler(float(cfg.infer.temperature))
            t0 = time.perf_counter()
            z_t, history, trunc = infer(st.stream, editor, z0, temperature=float(cfg.infer.temperature),
                                        max_new_tokens=ucfg.max_new_tokens, max_prompt_tokens=ucfg.max_prompt_tokens,
                                        prefix=ucfg.prefix, actions=ucfg.actions, token_budget=ucfg.token_budget,
                                        count_tokens=token_counter(engine.tokenizer))
            rl_last = start + results["rl"]["steps_run"] - 1 if "rl" in results else start - 1
            if process.count() > 1:         # every process edited the stream with the same keys
                collectives.agree("z_T and its edit history", json.dumps([render_skill_md(z_t), history]))
            folder = workdir / "skill" / z_t.name
            if process.is_writer():
                folder = write_skill_folder(workdir / "skill", z_t, history, provenance=provenance(
                    "skill_alpha", run_id=workdir.name, step=rl_last if rl_last >= 0 else None))
            results["inference"] = {"folder": str(folder), "rules": len(rules_of(z_t).rules),
                                    "skill_tokens": skill_tokens(z_t, token_counter(engine.tokenizer)),
                                    "actions": action_histogram(history), "truncations": dict(trunc),
                                    "seconds": time.perf_counter() - t0}
            print("inference:", json.dumps(results["inference"]))
            ev = evaluate(cfg, st, z_t, workdir)
            if ev:
                results["eval"] = ev
        if process.is_writer():
            (workdir / "results.json").write_text(json.dumps(results, indent=2, default=str))
    finally:
        close = getattr(st.scorer, "close", None)
        if close:
            close()
        engine.close()
    return results


def train(cfg, engine, st, lanes, z0, ucfg, start, workdir) -> dict:
    """RL steps ``start .. cfg.steps - 1``: units of all lanes -> rewards -> one GRPO update.

    Stops on :class:`~skillax.methods.common.clock.RLClock` (``max_train_minutes`` from the
    start of this call, ``train_until_unix``): after the step that passes the budget (or
    before a step that would end past the deadline) a checkpoint is saved and training stops;
    the caller goes on to inference and evaluation, and a re-run resumes RL.
    Returns {"steps_run", "last_step", "stop_reason", "seconds"}."""
    objectives = obj_lib.objective_configs(cfg.rl)
    editor = engine.policy_sampler(float(cfg.rl.temperature))
    count = token_counter(engine.tokenizer)
    writer = MetricsWriter(workdir / "metrics.jsonl", total_steps=int(cfg.steps), initial_step=start,
                           bar_keys=("reward/mean", "valid_rate", "r_ctrl", "units_skipped"))
    clock = RLClock.from_config(cfg).start()
    # an absolute deadline already passed (e.g. a long wait for the warm start): no step at all;
    # the minutes budget only ever stops after a step (RLClock's contract)
    reason = collectives.first_reason(clock.stop_reason(0.0) if clock.deadline() > 0 else None)
    last_s, done, step = 0.0, 0, start - 1
    compile_s = compile_timer()
    try:
        for step in range(start, int(cfg.steps)):
            if reason:
                break
            t0, c0 = time.perf_counter(), compile_s()
            results, times = run_units(_inputs(lanes, st.stream, cfg), editor, st.scorer, ucfg)
            for lane, res in zip(lanes, results):
                lane.advance(res.carry, len(st.stream), z0)
            if process.count() > 1:          # one truth: the same rewards and lane skills everywhere
                collectives.agree(f"the units' rewards and the lanes of step {step}", units_bytes(results, lanes))
            gens, advs, rstats = obj_lib.training_rows(results, str(cfg.unit.zero_variance))
            train_metrics = {}
            if gens:
                batch = build_batch(gens, advs, list(objectives), length_buckets=tuple(cfg.train.length_buckets),
                                    rows_multiple=int(cfg.train.micro_batch),
                                    drop_truncated=bool(cfg.rl.drop_truncated),
                                    pad_id=int(engine.tokenizer.pad_token_id or 0))
                train_metrics = engine.train(batch, objectives)
                train_metrics["batch_len"] = int(batch["tokens"].shape[1])
            if process.is_writer():
                with open(workdir / "samples.jsonl", "a", encoding="utf-8") as f:
                    f.write(json.dumps(unit_sample(step, results[0])) + "\n")
            m = step_metrics(results, times, count)
            m.update({f"rows/{k}": v for k, v in rstats.items()})
            m.update(train_metrics)
            m["skill_rules/lane0"] = len(rules_of(lanes[0].skill).rules)
            m["time/step_s"] = time.perf_counter() - t0
            m["time/compile_s"] = compile_s() - c0
            m.update(peak_memory_metrics())
            last_s = next_step_estimate(m["time/step_s"], m["time/compile_s"])
            writer.write(step, m)
            done += 1
            reason = collectives.first_reason(clock.stop_reason(last_s))   # every process stops at the same step
            if (step + 1) % int(cfg.checkpoint_every) == 0 or step + 1 == int(cfg.steps) or reason:
                engine.save(step, {"lanes": [lane.to_host() for lane in lanes]})
            if reason:
                print(f"RL stops after step {step}: {reason} (re-run to resume)")
    finally:
        writer.close()
    if process.is_writer():
        try:
            from skillax.rl.plot import plot

            plot(workdir / "metrics.jsonl", workdir / "metrics.png",
                 keys=["reward/mean", "valid_rate", "r_ctrl", "action/NOOP", "action/CREATE", "edit/loss"])
        except Exception as e:  # plotting must never fail a finished run
            print(f"plot skipped: {e}")
    return {"steps_run": done, "last_step": step, "stop_reason": reason, "seconds": clock.elapsed_s}
