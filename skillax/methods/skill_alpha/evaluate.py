"""Skill-alpha evaluation: the frozen worker's score on held-out tasks with z_T vs no skill.

Two entry points:

* :func:`evaluate_conditions` (experience setting; the learning protocol, issue 18): every
  game of every split in ``eval_splits(cfg)``, one episode per game per condition
  (:func:`eval_conditions`: ``no_skill``; ``with_skill`` = z_T; ``handwritten`` = z_hand,
  ``handwritten``), one :class:`~skillax.evaluation.EpisodeRecord` per episode written with
  ``write_condition`` to ``<workdir>/eval/<condition>__<split>.jsonl``; a crashed game or a
  worker error is a *loss* with ``failed`` set (never dropped); episodes run in lock-step
  chunks of ``eval.batch_size``; summaries and paired differences vs ``no_skill`` go to
  ``eval.json``. Sampling keys (common random numbers): the pass plays on the frozen worker's
  fresh evaluation stream (``anchors.EnvScorer.evaluation_keys``; the training counter does
  not move), turn t of game g of the i-th split keyed on (base + t,
  ``evaluation_episode(i, g)``) -- the same key in every condition and arm of one seed,
  whatever the training history, the chunking and the conditions an arm evaluates.
* :func:`evaluate_skill` (document / reasoning, with ``eval.repeats``): means per condition.
  Its worker calls are not keyed (one ``score`` call of interleaved conditions, each row on
  the training counter's word and its position): out of the common-random-numbers scheme;
  these settings are not in the learning protocol and their judge may be the worker itself.

In :func:`evaluate_skill` both conditions run in one batched ``scorer.score`` call (same worker, same verifier, same
tasks; the only difference is the skill context), ``repeats`` times each. A task whose run
failed (worker / judge / game failure) is excluded from *both* conditions' means and counted
in ``failed``, so a failure never moves the comparison. The paper's ablation reading of the
action histogram (removing MERGE/PRUNE hurts) is reported next to it by the caller
(:func:`skillax.methods.skill_alpha.inference.action_histogram`).
"""
from __future__ import annotations

import collections
from typing import Sequence

from skillax.agents.envs.base import Task
from skillax.methods.skill_alpha.prompts import skill_context
from skillax.skills.skill_md import SkillDoc


def evaluate_skill(scorer, tasks: Sequence[Task], skill: SkillDoc | None, *, repeats: int = 1,
                   baseline: SkillDoc | None = None) -> dict:
    """Mean verified score on ``tasks`` with ``skill`` vs ``baseline`` (default: no skill).

    Returns ``{"with_skill", "no_skill", "delta", "n", "failed", "per_family": {family:
    {"with_skill", "no_skill", "n"}}, "skill_rules"}``; scores are fractions in [0, 1].
    Raises ValueError for no tasks or ``repeats < 1``.
    """
    if not tasks:
        raise ValueError("evaluate_skill needs at least one held-out task")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    ctx, base = skill_context(skill), skill_context(baseline)
    runs = [(c, t) for _ in range(repeats) for t in tasks for c in (ctx, base)]
    scores = scorer.score(runs)
    per = collections.defaultdict(lambda: [0.0, 0.0, 0])
    tot = [0.0, 0.0, 0]
    failed = 0
    for j in range(0, len(runs), 2):
        a, b = scores[j], scores[j + 1]
        fam = runs[j][1].family
        if a.error is not None or b.error is not None:
            failed += 1
            continue
        for acc in (per[fam], tot):
            acc[0] += a.score
            acc[1] += b.score
            acc[2] += 1
    n = tot[2]
    out = {"with_skill": tot[0] / n if n else None, "no_skill": tot[1] / n if n else None,
           "n": n, "failed": failed, "repeats": repeats,
           "per_family": {f: {"with_skill": v[0] / v[2], "no_skill": v[1] / v[2], "n": v[2]}
                          for f, v in sorted(per.items()) if v[2]}}
    out["delta"] = None if not n else out["with_skill"] - out["no_skill"]
    out["skill_chars"] = len(ctx)
    return out


# ----------------------------------------------------------------------------- per-episode records
CONDITIONS = ("no_skill", "with_skill", "handwritten")


def eval_conditions(cfg, loaded_warm_start: bool = False) -> tuple[str, ...]:
    """``config.eval.conditions`` (tuple or "a,b"), in :data:`CONDITIONS` order.

    Empty = the conditions this run adds: ``no_skill``, ``with_skill`` and, when
    ``eval.handwritten_dir`` is set, ``handwritten``; but only ``with_skill`` for a run that
    ``loaded_warm_start`` -- ``no_skill`` and ``handwritten`` depend on the frozen worker
    alone, which the run that saved the warm start evaluated on the same games (the
    campaign's ``rl`` arm pairs its ``with_skill`` records with the ``sft`` arm's).
    Raises ValueError for an unknown condition or ``handwritten`` without a folder."""
    e = cfg.eval
    hand = str(e.get("handwritten_dir", "") or "")
    spec = e.get("conditions", "") or ""
    items = [x.strip() for x in spec.split(",")] if isinstance(spec, str) else [str(x).strip() for x in spec]
    default = ["with_skill"] if loaded_warm_start else ["no_skill", "with_skill"] + (["handwritten"] if hand else [])
    got = [x for x in items if x] or default
    bad = sorted(set(got) - set(CONDITIONS))
    if bad:
        raise ValueError(f"eval.conditions: unknown {bad}; allowed {CONDITIONS}")
    if "handwritten" in got and not hand:
        raise ValueError("eval.conditions has 'handwritten' but eval.handwritten_dir is empty")
    return tuple(c for c in CONDITIONS if c in got)


def _records_from_play(scorer, jobs, batch_size: int, episode_ids: Sequence[int]) -> list:
    """One EpisodeRecord per (ctx, task) job, played in lock-step chunks of ``batch_size``.
    A crashed game or a worker error is a loss with ``failed`` set, never dropped.

    Keys: a scorer with ``evaluation_keys`` (``anchors.EnvScorer``) plays every chunk on the
    pass's keys, job j keyed on ``episode_ids[j]``; one without plays chunks as they come."""
    from skillax.evaluation import EpisodeRecord

    keys = scorer.evaluation_keys() if hasattr(scorer, "evaluation_keys") else None
    out = []
    step = batch_size if batch_size > 0 else max(len(jobs), 1)
    for i in range(0, len(jobs), step):
        chunk = jobs[i:i + step]
        kw = {} if keys is None else {"episode_ids": episode_ids[i:i + step], "keys": keys}
        for (ctx, task), tr in zip(chunk, scorer.play(chunk, **kw)):
            err = next((s.gen.get("error") for s in tr.steps if s.gen.get("error")), None)
            rec = EpisodeRecord.from_trajectory(task, tr, skill_chars=len(ctx))
            if err is not None:
                rec.won, rec.failed = False, True
                rec.extras["error"] = str(err)[:200]
            elif tr.failed:
                rec.extras["error"] = str(tr.fail_reason)[:200]
            out.append(rec)
    return out


def _records_from_score(scorer, jobs, batch_size: int, episode_ids: Sequence[int]) -> list:
    """Records for single-answer settings: won = verified score 1, steps = 1 (unkeyed worker
    calls: ``episode_ids`` unused; out of the common-random-numbers scheme, module docstring)."""
    from skillax.evaluation import EpisodeRecord

    out = []
    step = batch_size if batch_size > 0 else max(len(jobs), 1)
    for i in range(0, len(jobs), step):
        chunk = jobs[i:i + step]
        for (ctx, task), sc in zip(chunk, scorer.score(chunk)):
            out.append(EpisodeRecord(task.id, task.split, task.family, won=sc.error is None and sc.score >= 1.0,
                                     steps=1, failed=sc.error is not None,
                                     extras={"score": sc.score, "skill_chars": len(ctx)}))
    return out


def evaluate_conditions(scorer, tasks_by_split: dict, skills: dict, workdir, *, batch_size: int = 0) -> dict:
    """The held-out evaluation of the learning protocol: every task of every split, one
    episode per task per condition (same tasks for all conditions), records written with
    :func:`skillax.methods.common.eval_io.write_condition`.

    Args:
      scorer: an anchors scorer (``play`` for games, else ``score``).
      tasks_by_split: {split: [Task]}. skills: {condition: SkillDoc | None} (None = no skill).
      workdir: run folder (records under ``eval/``). batch_size: episodes per lock-step chunk
        (0 = all at once); conditions and splits share chunks. Sampling keys: game g of the
        i-th split of ``tasks_by_split`` keys on ``evaluation_episode(i, g)`` in every condition
        on one evaluation stream (module docstring), so the episodes do not depend on
        ``batch_size`` or on which conditions are evaluated.
    Returns ``{"conditions", "splits", "summaries": {"<condition>__<split>": summary},
    "paired": {"<condition>__<split>": paired_delta vs no_skill}}`` (paired only when
    ``no_skill`` is evaluated). Raises ValueError for a split without tasks.
    """
    from skillax.evaluation import paired_delta
    from skillax.methods.common.eval_io import write_condition
    from skillax.methods.common.policy import evaluation_episode

    ctx = {c: skill_context(s) for c, s in skills.items()}
    jobs, keys, eids = [], [], []
    for i, (split, tasks) in enumerate(tasks_by_split.items()):
        if not tasks:
            raise ValueError(f"no evaluation tasks for split {split!r}")
        for g, t in enumerate(tasks):
            for c in skills:
                jobs.append((ctx[c], t))
                keys.append((c, split))
                eids.append(evaluation_episode(i, g))
    run = _records_from_play if hasattr(scorer, "play") else _records_from_score
    recs = run(scorer, jobs, int(batch_size), eids)
    by: dict = collections.defaultdict(list)
    for k, r in zip(keys, recs):
        by[k].append(r)
    out = {"conditions": list(skills), "splits": list(tasks_by_split), "summaries": {}, "paired": {}}
    for split in tasks_by_split:
        for c in skills:
            out["summaries"][f"{c}__{split}"] = write_condition(workdir, c, split, by[(c, split)])
        if "no_skill" in skills:
            for c in skills:
                if c != "no_skill":
                    out["paired"][f"{c}__{split}"] = paired_delta(by[("no_skill", split)], by[(c, split)])
    return out
