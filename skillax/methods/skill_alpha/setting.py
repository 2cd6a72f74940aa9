"""Build a Skill-alpha setting from the config: worker, judge, anchored-query scorer, evidence
stream and held-out tasks, for experience (ALFWorld / TextWorld), document and reasoning.

* Worker ``kind="frozen"``: a :class:`~skillax.agents.workers.local.LocalWorker` over the
  engine's sampler with a *copy* of the initial editor weights (``engine.frozen_copy()``), so
  the worker stays frozen while the editor trains; ``kind="openai"``: an
  :class:`~skillax.agents.workers.openai_compat.OpenAICompatWorker`.
* Experience tasks: the training split's tasks of each family are shuffled with a seeded RNG;
  the first ``n_evidence_per_family`` give evidence (``evidence.source``: the worker's
  trajectories by default, see ``evidence_stream``), the next ``n_anchor_per_family`` are
  the anchored queries, and the worker's play SFT uses only the others
  (:func:`play_sft_tasks`). ``env.name="auto"`` uses ALFWorld when its data is found
  (``../shared``), else TextWorld.
* The stream is cached as ``<workdir>/evidence_stream.json`` (worker trajectories are sampled
  once; a resumed run reuses them).
* Several processes (issue 21): every process builds the same setting; the evidence games are
  split across them by the scorer (``anchors.EnvScorer.play``: each plays its block, all get
  every trajectory), every process checks that the cache file is there or not alike and that
  the streams agree (digest), and process 0 writes the cache.
"""
from __future__ import annotations

import collections
import dataclasses
import pathlib
import random
from typing import Sequence

from skillax.agents.envs.base import Task
from skillax.agents.envs.runner import resolve_workers
from skillax.methods.skill_alpha import anchors as anchors_mod
from skillax.methods.skill_alpha import evidence_stream as es
from skillax.methods.common.play import play_overlap
from skillax.methods.skill_alpha.config import DEFAULT_SKILL
from skillax.methods.skill_alpha.prompts import skill_context
from skillax.rl.durable import commit_text
from skillax.skills.evidence import EvidenceConfig
from skillax.skills.rules import make_rule_body, with_rules
from skillax.skills.skill_md import SkillDoc, make_skill


@dataclasses.dataclass
class Setting:
    name: str
    stream: es.EvidenceStream
    scorer: object
    eval_tasks: list[Task]
    info: dict


def evidence_config(cfg, max_prompt_tokens: int | None = None) -> EvidenceConfig:
    e = cfg.evidence
    return EvidenceConfig(units_per_chunk=int(e.units_per_chunk), max_steps=int(e.max_steps),
                          max_traj_chars=int(e.max_traj_chars), max_paragraph_chars=int(e.max_paragraph_chars),
                          max_prompt_tokens=int(max_prompt_tokens or e.max_prompt_tokens))


def initial_skill(cfg) -> SkillDoc:
    """z_0 from ``config.skill`` (name/description default per setting; rules may be empty),
    or, with ``init_skills`` (a folder of SKILL.md folders, issue 22), from those skills:
    the one skill, or the one named ``skill.name`` (``skills.importing.initial_skill_from``:
    its list items become rules R1..Rn, existing ``[Rk]`` rules keep their ids); a folder of
    several without ``skill.name`` gives one skill holding all their rules (:func:`merged_skill`).
    Raises ValueError when the folder holds no valid skill or no skill of that name."""
    from skillax.skills import importing

    name, desc = DEFAULT_SKILL[cfg.setting]
    report = importing.from_config(cfg)
    if report is not None:
        chosen = cfg.skill.get("name") or None
        if chosen or len(report.skills) <= 1:
            return importing.initial_skill_from(report, name=chosen)
        return merged_skill(report.docs(), cfg.skill.get("description") or desc, name)
    doc = make_skill(cfg.skill.get("name") or name, cfg.skill.get("description") or desc)
    return with_rules(doc, make_rule_body(list(cfg.skill.get("initial_rules") or ())))


def merged_skill(docs: Sequence[SkillDoc], description: str, name: str) -> SkillDoc:
    """One rule skill from several imported skills (Skill-alpha edits one skill): each
    skill's rules (``skills.importing.as_rule_skill``; a skill without list items gives one
    rule, its body or description on one line) in folder order, each tagged with the skill's
    name: ``- [R5] alfworld-heat-and-place: Go to the microwave and heat it ...``."""
    from skillax.skills.importing import as_rule_skill
    from skillax.skills.rules import rules_of

    texts = []
    for d in docs:
        rules = [r.text for r in rules_of(as_rule_skill(d)).rules]
        texts += [f"{d.name}: {t}" for t in (rules or [" ".join((d.body.strip() or d.description).split())])]
    return with_rules(make_skill(name, description), make_rule_body(texts))


def _openai(ocfg, role: str = "worker"):
    from skillax.methods.common.endpoint import openai_worker

    return openai_worker(ocfg, role)


def build_worker(cfg, engine, reuse: bool = False, params=None):
    """The frozen worker (module docstring); its weights are saved under
    ``<workdir>/frozen/worker`` and, with ``reuse`` (a resumed run), reloaded from there.
    ``params``: use these frozen weights instead (a loaded warm start, already persisted)."""
    w = cfg.worker
    if w.kind == "openai":
        return _openai(w.openai)
    if w.kind != "frozen":
        raise ValueError(f"worker.kind must be 'frozen' or 'openai', got {w.kind!r}")
    if params is None:
        params = engine.persistent_frozen("worker", reuse=reuse)
    ps = engine.policy_sampler(float(w.temperature), frozen_params=params)
    budget = int(cfg.model.max_len) - max(int(w.max_tokens), int(w.action_tokens))
    return policy_worker(engine.tokenizer, ps, budget)


def policy_worker(tokenizer, ps, max_prompt_tokens: int | None):
    """A :class:`~skillax.agents.workers.LocalWorker` sampling with the ``PolicySampler`` ``ps``.

    Keyed game turns (``reserve_calls``: ``anchors.EnvScorer``): overlapped play samples what
    lock-step samples. ``evaluation_stream``: the same worker on ``ps.evaluation_stream()`` (a
    fresh counter from ``EVAL_CALL_OFFSET``; ``ps``'s training counter untouched), so every
    held-out evaluation pass plays on the same keys (common random numbers).
    ``max_prompt_tokens``: longer prompts are not generated (an error completion)."""
    from skillax.agents.workers import LocalWorker

    def generate_fn(prompt_ids, max_new_tokens, temperature, stop_strings, keys=None):
        gens = ps.sample(prompt_ids, objective="worker", episodes=list(range(len(prompt_ids))),
                         max_new_tokens=max_new_tokens, stop_strings=stop_strings, temperature=temperature,
                         keys=keys)
        return [(g.completion_ids, g.stop_reason) for g in gens]

    return LocalWorker(tokenizer, generate_fn, max_prompt_tokens=max_prompt_tokens, reserve_calls=ps.reserve_calls,
                       evaluation_stream=lambda: policy_worker(tokenizer, ps.evaluation_stream(), max_prompt_tokens))


def build_judge(cfg, worker):
    from skillax.agents.judges import RubricJudge

    j = cfg.judge
    jw = worker if j.kind == "worker" else _openai(j.openai, "judge") if j.kind == "openai" else None
    if jw is None:
        raise ValueError(f"judge.kind must be 'worker' or 'openai', got {j.kind!r}")
    return RubricJudge(jw, max_retries=int(j.max_retries), max_tokens=int(j.max_tokens))


def play_config(cfg):
    from skillax.agents.agent_loop import PlayConfig

    p = cfg.play
    return PlayConfig(history_k=int(p.history_k), max_admissible=int(p.max_admissible),
                      max_obs_chars=int(p.max_obs_chars), max_skill_chars=int(p.max_skill_chars), max_skills=1,
                      require_think=bool(p.get("require_think", True)), think=bool(p.get("think", True)))


def split_by_family(tasks: Sequence[Task], n_evidence: int, n_anchor: int, seed: int
                    ) -> tuple[list[Task], list[Task]]:
    """Per family (seeded shuffle): first ``n_evidence`` -> evidence, next ``n_anchor`` -> anchors."""
    fams: dict[str, list[Task]] = collections.defaultdict(list)
    for t in sorted(tasks, key=lambda t: t.id):
        fams[t.family].append(t)
    ev, an = [], []
    for f, ts in sorted(fams.items()):
        random.Random(f"{seed}/{f}").shuffle(ts)
        ev += ts[:n_evidence]
        an += ts[n_evidence:n_evidence + n_anchor]
    return ev, an


def experience_tasks(cfg, split: str, limit: int | None = None) -> list[Task]:
    """Tasks of ``split`` (``env.families`` only, when set); a seeded subset of ``limit``."""
    from skillax.methods.common import tasks as task_lib

    keep = set(cfg.env.get("families") or ())
    ts = [t for t in task_lib.load_tasks(cfg.env, split) if not keep or t.family in keep]
    if limit and limit < len(ts):  # seeded subset covering the families
        ts = sorted(random.Random(f"{split}-{limit}").sample(ts, limit), key=lambda t: t.id)
    return ts


def spread(tasks: Sequence[Task], n: int) -> list[Task]:
    """``n`` tasks taken round-robin over the families (so a small set covers every type)."""
    fams: dict[str, list[Task]] = collections.defaultdict(list)
    for t in tasks:
        fams[t.family].append(t)
    out, i = [], 0
    while len(out) < n and any(i < len(v) for v in fams.values()):
        out += [v[i] for _, v in sorted(fams.items()) if i < len(v)][: n - len(out)]
        i += 1
    return out


def evidence_and_anchor_tasks(cfg) -> tuple[list[Task], list[Task]]:
    """(evidence tasks, anchor tasks) of the training split (:func:`split_by_family`)."""
    train = experience_tasks(cfg, cfg.env.train_split)
    return split_by_family(train, int(cfg.evidence.n_evidence_per_family), int(cfg.evidence.n_anchor_per_family),
                           int(cfg.seed))


def play_sft_tasks(cfg) -> list[Task]:
    """Training games for the worker's play SFT: every game of the training split that is
    neither an evidence nor an anchor game, ``sft.n_tasks`` of them (0 = all) taken
    round-robin over the families (:func:`spread`, so a subset stays stratified by type).

    Disjoint on purpose: the play SFT fits the expert's actions almost exactly (GPU run: NLL
    1.48 -> 0.0015), so a memorised anchored game is won whatever the skill says and its
    rollback reward can never favour an edit (in configs/skill_alpha_alfworld_gpu.py's first
    GPU run 11 of the 48 anchors and 3 of the 24 evidence games were play-SFT games)."""
    ev, an = evidence_and_anchor_tasks(cfg)
    used = {t.id for t in ev} | {t.id for t in an}
    rest = [t for t in experience_tasks(cfg, cfg.env.train_split) if t.id not in used]
    n = int(cfg.sft.n_tasks)
    return spread(rest, n if n > 0 else len(rest))


def _experience(cfg, worker, z0, ecfg):
    from skillax.methods.common import tasks as task_lib

    env = task_lib.resolve_env(cfg.env.name)
    scorer = anchors_mod.EnvScorer(worker, env, env_kwargs={"max_steps": int(cfg.env.max_steps)},
                                   n_workers=resolve_workers(cfg.env.workers), play_cfg=play_config(cfg),
                                   max_steps=int(cfg.env.max_steps), temperature=float(cfg.worker.temperature),
                                   max_tokens=int(cfg.worker.action_tokens),
                                   overlap=play_overlap(cfg.play.get("overlap", 1)))
    eval_tasks = experience_tasks(cfg, cfg.env.eval_split, int(cfg.eval.n_tasks) or None)

    def stream():
        ev, an = evidence_and_anchor_tasks(cfg)
        source = str(cfg.evidence.get("source", "worker"))
        if source not in es.SOURCES:
            raise ValueError(f"evidence.source must be one of {es.SOURCES}, got {source!r}")
        trajs = scorer.play([(skill_context(z0), t) for t in ev]) if source != "expert" else [None] * len(ev)
        trajs = [None if tr is None or tr.failed or any(s.gen.get("error") for s in tr.steps) else tr
                 for tr in trajs]
        if env == "alfworld":
            from skillax.agents.envs.experts import alfworld_experts

            experts = alfworld_experts(ev, n_workers=max(1, resolve_workers(cfg.env.workers)))
        else:
            from skillax.agents.envs.experts import textworld_expert

            experts = [textworld_expert(t) for t in ev]
        per_family: dict = collections.defaultdict(lambda: [0, 0])
        for t, tr in zip(ev, trajs):
            if tr is not None:
                per_family[t.family][0] += int(tr.won)
                per_family[t.family][1] += 1
        return es.experience_stream(ev, trajs, experts, an, ecfg, order=cfg.evidence.order, source=source), \
            {"env": env, "evidence_source": source, "evidence_tasks": len(ev), "anchor_tasks": len(an),
             "worker_evidence_success": sum(bool(t and t.won) for t in trajs) / max(len(trajs), 1),
             "worker_evidence_per_family": {f: v for f, v in sorted(per_family.items())}}
    return env, scorer, eval_tasks, stream


def _reasoning(cfg, worker, z0, ecfg):
    from skillax.agents.envs.reasoning import reasoning_gym_tasks

    r = cfg.reasoning
    scorer = anchors_mod.ReasoningScorer(worker, temperature=float(cfg.worker.temperature),
                                         max_tokens=int(cfg.worker.max_tokens))
    eval_tasks = reasoning_gym_tasks(list(r.datasets), n_per_dataset=int(r.eval_per_dataset), split="test")
    if int(cfg.eval.n_tasks):
        eval_tasks = eval_tasks[: int(cfg.eval.n_tasks)]

    def stream():
        train = reasoning_gym_tasks(list(r.datasets), n_per_dataset=int(r.n_per_dataset), split="train")
        ev, an = split_by_family(train, int(cfg.evidence.n_evidence_per_family),
                                 int(cfg.evidence.n_anchor_per_family), int(cfg.seed))
        scores = scorer.score([(skill_context(z0), t) for t in ev])
        kept = [(t, s) for t, s in zip(ev, scores) if s.error is None]
        st = es.reasoning_stream([t for t, _ in kept], [(s.answer, s.score) for _, s in kept], an, ecfg,
                                 order=cfg.evidence.order)
        return st, {"evidence_tasks": len(kept), "anchor_tasks": len(an),
                    "worker_evidence_success": sum(s.score for _, s in kept) / max(len(kept), 1)}
    return "reasoning", scorer, eval_tasks, stream


def _document(cfg, worker, z0, ecfg):
    from skillax.methods.skill_alpha.documents import load_document

    name, text, questions = load_document(cfg.document)
    scorer = anchors_mod.RubricScorer(worker, build_judge(cfg, worker), temperature=float(cfg.worker.temperature),
                                      max_tokens=int(cfg.worker.max_tokens))
    eval_tasks = [q for q in questions if q.split == "eval"]

    def stream():
        st = es.document_stream(name, text, questions, ecfg)
        return st, {"document": name, "chars": len(text), "questions": len(questions)}
    return name, scorer, eval_tasks, stream


def build_setting(cfg, worker, z0: SkillDoc, workdir: pathlib.Path | None,
                  max_prompt_tokens: int | None = None) -> Setting:
    """Scorer, evidence stream (cached in ``workdir``) and held-out tasks for ``cfg.setting``."""
    ecfg = evidence_config(cfg, max_prompt_tokens)
    builders = {"experience": _experience, "reasoning": _reasoning, "document": _document}
    if cfg.setting not in builders:
        raise ValueError(f"setting must be one of {sorted(builders)}, got {cfg.setting!r}")
    name, scorer, eval_tasks, make_stream = builders[cfg.setting](cfg, worker, z0, ecfg)
    from skillax import collectives, process

    cache = pathlib.Path(workdir) / "evidence_stream.json" if workdir else None
    info: dict = {"source": name}
    cached = cache is not None and cache.exists()
    # several processes: all see the cache alike before process 0 may write it
    collectives.agree("whether the evidence stream cache exists", str(cached))
    if cached:
        stream = es.EvidenceStream.from_json(cache.read_text(encoding="utf-8"))
        info["cached"] = True
    else:
        stream, more = make_stream()
        info.update(more)
        if cache is not None and process.is_writer():
            commit_text(cache, stream.to_json())   # atomic: a kill never leaves half a stream
    collectives.agree("the evidence stream", stream.to_json())
    if not len(stream):
        raise ValueError(f"the {cfg.setting} evidence stream is empty")
    sequence = str(cfg.evidence.get("sequence", "source"))
    stream = es.resequence(stream, sequence, int(cfg.seed))     # the cache keeps the source order
    info.update(chunks=len(stream), truncations=dict(stream.truncations), sequence=sequence)
    return Setting(cfg.setting, stream, scorer, list(eval_tasks), info)
