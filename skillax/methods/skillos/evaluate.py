"""SkillOS held-out evaluation: the frozen executor under three repo conditions, per game.

Conditions (``eval.conditions``; the learning protocol's SkillOS arms, issue 18):

* ``no_memory`` -- the paper's No Memory baseline: the executor plays every game with no
  skill (``retrieved = -1``: the condition has no retrieval).
* ``curated`` -- Algorithm 1 once per held-out group (one rollout, the curator sampled at
  ``eval.temperature``, the repo empty at each group's start, as in training): the executor
  plays each task with the BM25-retrieved skills of the repo curated *online by this
  process's curator* so far (the SFT-only curator when ``steps = 0``, the RL curator after
  RL). The final repo of every group is saved under ``<workdir>/eval_repos/<split>/``.
* ``handwritten`` -- a fixed repo loaded from ``eval.handwritten_dir`` (a folder of SKILL.md
  folders; ``benchmarks/learning/handwritten_skills`` has one correct skill per ALFWorld task
  type), BM25-retrieved per task, never curated: the upper bound of what a correct skill
  gives this executor.

Every condition plays the same games: the groups of :func:`eval_groups` (every game of the
split when ``eval.n_groups = 0``, grouped as in training; a leftover group may be smaller
than ``tasks_per_group``, down to one game). One :class:`~skillax.evaluation.EpisodeRecord`
per game and condition with ``retrieved`` = skills in context and extras ``group``,
``position`` (0 = the group's first task, played on the empty repo in ``curated``),
``group_size``; :func:`condition_summary` adds ``success_after_first`` (success over the
tasks at position >= 1: the ones an online-curated repo can help) to the summary.

Chunking (``eval.batch_size`` = B, GPU memory; 0 = no limit): ``no_memory`` and
``handwritten`` episodes of all splits are played B at a time; ``curated`` plays B groups at a
time (position i of every group of the chunk is one batched executor call, so B is again the
number of concurrent episodes). A failed env episode counts as a loss (``failed``).

Sampling keys (common random numbers): a pass plays on fresh evaluation streams of the frozen
executor and the curator (``Executor.evaluation_stream``, ``PolicySampler.evaluation_stream``:
private counters from ``EVAL_CALL_OFFSET``; the training counter does not move, so a periodic
evaluation, ``eval.every``, leaves the RL keys as they are without it) with its words reserved
once (:func:`pass_keys`), and game g of the i-th split (its index in the split's groups, in
order) keys on ``evaluation_episode(i, g)``: turn t of its play is keyed alike in ``no_memory``,
``handwritten`` and ``curated`` (a curated game whose retrieval is empty plays as in
``no_memory``), in every arm of one seed and whatever the chunking or the conditions evaluated.
An OpenAI-compatible executor has no keys: its play stays unkeyed (only the curator is keyed).

Several processes (issue 21): each chunk is split into contiguous blocks, one per process
(``collectives.share``); a process plays its block on its own pool with the sampling keys the
1-process run gives those episodes / groups (``episode_ids`` / ``offset``), and the records (and
the curated rollouts, ``rollout.gather_rollouts``) are all-gathered in chunk order. Every
process returns the same records and statistics (checked by digest); only process 0 writes
``repo_dir``.
"""
from __future__ import annotations

import collections
import dataclasses
import pathlib
import shutil
from typing import Callable, Mapping, Sequence

from skillax import collectives, process
from skillax.evaluation import EpisodeRecord, summarize
from skillax.methods.skillos import prompts
from skillax.methods.skillos.groups import TaskGroup, make_groups
from skillax.methods.skillos.rollout import OP_KINDS, PassKeys, RolloutConfig, gather_rollouts, rollout_step
from skillax.skills.repo import SkillRepo
from skillax.skills.retrieval import BM25Index

CONDITIONS = ("no_memory", "curated", "handwritten")


def conditions(eval_cfg, loads_warm_start: bool = False) -> tuple[str, ...]:
    """The conditions to run: ``eval.conditions`` ("a,b"; "" = no_memory, curated and, when
    ``eval.handwritten_dir`` is set, handwritten; "none" = no evaluation; "auto" = "" except
    ``curated`` alone when ``loads_warm_start``: an arm that loads a shared warm start has the
    frozen executor of the arm that saved it, so its no_memory / handwritten episodes would
    only replicate that arm's, at the cost of 2 x the games). Raises ValueError for an unknown
    or repeated name, or ``handwritten`` without ``eval.handwritten_dir``."""
    raw = str(eval_cfg.get("conditions", "") or "").strip()
    hw = str(eval_cfg.get("handwritten_dir", "") or "")
    if raw == "none":
        return ()
    if raw == "auto":
        raw = "curated" if loads_warm_start else ""
    names = [x.strip() for x in raw.split(",") if x.strip()] if raw else \
        ["no_memory", "curated"] + (["handwritten"] if hw else [])
    bad = [n for n in names if n not in CONDITIONS]
    if bad or len(set(names)) != len(names):
        raise ValueError(f"eval.conditions must be distinct names from {CONDITIONS} (or 'none'), got {raw!r}")
    if "handwritten" in names and not hw:
        raise ValueError("the handwritten condition needs eval.handwritten_dir (a folder of SKILL.md folders)")
    return tuple(names)


def spread_groups(groups: Sequence[TaskGroup], n: int) -> list[TaskGroup]:
    """``n`` groups taken round-robin over the group keys (task types; sorted), so a few
    groups cover every type; ``n`` >= len: all groups, in their order."""
    if n >= len(groups):
        return list(groups)
    by_key: dict[str, list[TaskGroup]] = collections.defaultdict(list)
    for g in groups:
        by_key[g.key].append(g)
    out, i = [], 0
    while len(out) < n:
        out += [v[i] for _, v in sorted(by_key.items()) if i < len(v)][: n - len(out)]
        i += 1
    return out


def eval_groups(tasks, tasks_per_group: int, grouping: str, seed: int, n_groups: int) -> list[TaskGroup]:
    """Held-out groups as in training (same clustering, ``tasks_per_group``, seed) but with
    ``min_size = 1`` so no game is dropped; ``n_groups`` > 0 keeps that many (:func:`spread_groups`)."""
    groups = make_groups(tasks, int(tasks_per_group), grouping=str(grouping), seed=int(seed), min_size=1)
    return spread_groups(groups, int(n_groups)) if int(n_groups) > 0 else groups


def load_handwritten(folder: str | pathlib.Path) -> SkillRepo:
    """The fixed repo of the ``handwritten`` condition (read only; every SKILL.md must be
    strict-valid). Raises ValueError when the folder holds no skill."""
    repo = SkillRepo(folder, durable=False, create=False, strict_load=True)
    if len(repo) == 0:
        raise ValueError(f"eval.handwritten_dir={folder} holds no SKILL.md folder")
    return repo


def condition_summary(records: Sequence[EpisodeRecord]) -> dict:
    """:func:`skillax.evaluation.summarize` plus ``success_after_first`` / ``n_after_first``
    (records whose ``extras["position"]`` >= 1; None when there is none)."""
    out = summarize(records)
    later = [r for r in records if int(r.extras.get("position", 0)) >= 1]
    out["success_after_first"] = (sum(r.won for r in later) / len(later)) if later else None
    out["n_after_first"] = len(later)
    return out


def repo_stats(rolls, count_tokens: Callable[[str], int]) -> dict:
    """Mean final repo size and tool calls by kind over ``rolls``; ``update_share`` =
    updates / (inserts + updates) (0 when neither happened)."""
    ops = collections.Counter()
    for r in rolls:
        ops.update(r.ops())
    n = max(len(rolls), 1)
    ins, upd = ops["insert_skill"], ops["update_skill"]
    out = {"repos": len(rolls), "repo_skills": sum(len(r.repo) for r in rolls) / n,
           "repo_tokens": sum(r.repo.size_tokens(count_tokens) for r in rolls) / n,
           "calls_total": sum(ops.values()), "calls_invalid": ops["invalid"],
           "update_share": upd / (ins + upd) if ins + upd else 0.0}
    out.update({f"ops_{k}": ops[k] for k in OP_KINDS})
    return out


@dataclasses.dataclass(frozen=True)
class _Slot:
    """One (split, group, position) of the evaluation: where a game sits."""

    split: str
    group: int
    position: int
    group_size: int
    key: str

    def extras(self) -> dict:
        return {"group": self.group, "position": self.position, "group_size": self.group_size,
                "group_key": self.key}


def pass_keys(executor, curator, pool, max_positions: int):
    """(executor, curator, :class:`PassKeys`) of one evaluation pass: the executor on its
    evaluation stream with its turn words and the judge word reserved on it (an endpoint
    executor: itself, ``play`` / ``judge`` None), the curator on its evaluation stream (None
    without a curator) with ``max_positions`` position words reserved after as many words as the
    executor's (one engine's streams share a key space: the two never key on the same word)."""
    ex = executor.evaluation_stream()
    reserve = getattr(ex.backend, "reserve", None)
    turns = ex.turns(pool)
    play = reserve(int(turns)) if reserve is not None and turns else None
    judge = reserve(1) if reserve is not None else None
    cur = None if curator is None else curator.evaluation_stream()
    curate = 0
    if cur is not None:
        cur.reserve_calls(int(turns or 0) + 1)
        curate = cur.reserve_calls(max(int(max_positions), 1))
    return ex, cur, PassKeys(play, judge, curate)


def game_ids(splits: Mapping[str, Sequence[TaskGroup]]) -> dict[tuple[str, int], tuple[int, ...]]:
    """{(split, group index): the key id of each of its tasks}: task ``pos`` of group ``gi`` of
    the i-th split is game g = its index in the split's tasks in group order, keyed on
    ``evaluation_episode(i, g)`` (``methods.common.policy``)."""
    from skillax.methods.common.policy import evaluation_episode

    out = {}
    for i, (split, groups) in enumerate(splits.items()):
        g = 0
        for gi, grp in enumerate(groups):
            out[(split, gi)] = tuple(evaluation_episode(i, g + pos) for pos in range(len(grp)))
            g += len(grp)
    return out


def _chunks(items: Sequence, size: int) -> list:
    size = len(items) if size <= 0 else size
    return [items[i:i + size] for i in range(0, len(items), max(size, 1))]


def _flat_condition(cond: str, splits: Mapping[str, Sequence[TaskGroup]], handwritten: SkillRepo | None,
                    cfg: RolloutConfig):
    """(slot, task, skill texts, retrieved count, skill names) of every game of ``cond``."""
    index = BM25Index.from_repo(handwritten, fields=cfg.retrieval_fields) if cond == "handwritten" else None
    out = []
    for split, groups in splits.items():
        for gi, g in enumerate(groups):
            for pos, task in enumerate(g.tasks):
                slot = _Slot(split, gi, pos, len(g), g.key)
                if index is None:
                    out.append((cond, slot, task, [], -1, []))
                else:
                    docs = [handwritten.get(n) for n, _ in index.search(task.goal, k=cfg.top_k)]
                    out.append((cond, slot, task, [prompts.executor_skill_text(d) for d in docs], len(docs),
                                [d.name for d in docs]))
    return out


def evaluate(splits: Mapping[str, Sequence[TaskGroup]], conds: Sequence[str], curator, executor, pool,
             root: str | pathlib.Path, cfg: RolloutConfig, *, batch_size: int = 0,
             handwritten: SkillRepo | None = None, repo_dir: str | pathlib.Path | None = None,
             keep_actions: bool = False) -> tuple[dict[tuple[str, str], list[EpisodeRecord]], dict[str, dict]]:
    """Play every condition on every split's groups (module docstring).

    Args:
      splits: split name -> its held-out groups (:func:`eval_groups`).
      conds: conditions from :data:`CONDITIONS`.
      curator: ``PolicySampler`` at the eval temperature (``curated``; its samples are not trained;
        the pass samples on its evaluation stream, module docstring; unused without ``curated``).
      executor: the frozen :class:`~skillax.methods.skillos.executor.Executor` (the pass plays on
        its evaluation stream; neither counter moves).
      handwritten: the fixed repo of ``handwritten`` (:func:`load_handwritten`).
      repo_dir: where the curated repos are saved (``<repo_dir>/<split>/g<group>/``); None = not saved.
      keep_actions: ``eval.keep_actions``: each no_memory / handwritten record keeps the
        executor's actions in order (``extras["actions"]``; None for a step without a parsable
        action), so a condition's wins and losses can be read afterwards. The curated rollouts'
        task records hold no actions: their records never carry them.
    Returns:
      (records per (condition, split) in game order, curated repo statistics per split).
    """
    bad = [c for c in conds if c not in CONDITIONS]
    if bad:
        raise ValueError(f"unknown eval condition(s) {bad}; known: {CONDITIONS}")
    if "handwritten" in conds and handwritten is None:
        raise ValueError("the handwritten condition needs its repo")
    records: dict[tuple[str, str], list[EpisodeRecord]] = {(c, s): [] for c in conds for s in splits}
    longest = max((len(g) for groups in splits.values() for g in groups), default=1)
    executor, curator, keys = pass_keys(executor, curator if "curated" in conds else None, pool, longest)
    ids = game_ids(splits)
    flat = [e for c in conds if c != "curated" for e in _flat_condition(c, splits, handwritten, cfg)]
    for chunk in _chunks(flat, batch_size):
        lo, hi = collectives.share(len(chunk))          # several processes: this one's block
        mine = chunk[lo:hi]
        trajs = executor.play(pool, [e[2] for e in mine], [e[3] for e in mine], base=keys.play,
                              episode_ids=[ids[(e[1].split, e[1].group)][e[1].position] for e in mine])
        recs = [((cond, slot.split), EpisodeRecord.from_trajectory(
                    task, tr, retrieved=n_ret, **(slot.extras() | ({"skills": names} if n_ret >= 0 else {})
                                                  | ({"actions": [st.action for st in tr.steps]} if keep_actions else {}))))
                for (cond, slot, task, _, n_ret, names), tr in zip(mine, trajs)]
        for key, rec in collectives.concat(collectives.allgather_objects(recs)):
            records[key].append(rec)
    stats: dict[str, dict] = {}
    if "curated" in conds:
        units = [(split, gi, g) for split, groups in splits.items() for gi, g in enumerate(groups)]
        count = lambda s: len(curator.tokenizer.encode(s, add_special_tokens=False))  # noqa: E731
        rolls_by_split: dict[str, list] = collections.defaultdict(list)
        for c, chunk in enumerate(_chunks(units, batch_size)):
            lo, hi = collectives.share(len(chunk))
            block = dataclasses.replace(keys, games=tuple(ids[(split, gi)] for split, gi, _ in chunk[lo:hi]))
            rolls = rollout_step([g for _, _, g in chunk[lo:hi]], 1, curator, executor, pool, root, cfg,
                                 tag=f"eval{c}", offset=lo, group_sizes=[len(g) for _, _, g in chunk], keys=block)
            rolls = gather_rollouts(rolls, root)        # every process: every group's rollout, in order
            for (split, gi, g), ro in zip(chunk, rolls):
                for pos, (task, rec) in enumerate(zip(g.tasks, ro.records)):
                    slot = _Slot(split, gi, pos, len(g), g.key)
                    records[("curated", split)].append(EpisodeRecord(
                        task_id=task.id, split=task.split, task_type=task.family, won=rec.success,
                        steps=rec.n_steps, invalid_actions=rec.n_invalid, failed=rec.failed,
                        retrieved=len(rec.retrieved), extras=slot.extras() | {"skills": list(rec.retrieved)},
                        **rec.play))
                if repo_dir is not None and process.is_writer():
                    dest = pathlib.Path(repo_dir) / split / f"g{gi}"
                    if dest.exists():
                        shutil.rmtree(dest)
                    SkillRepo.from_state(dest, ro.repo.state(), durable=False)
                rolls_by_split[split].append(ro)
            for ro in rolls:
                shutil.rmtree(ro.repo.root, ignore_errors=True)
        stats = {s: repo_stats(r, count) for s, r in rolls_by_split.items()}
    order = {s: {t.id: i for i, t in enumerate(t for g in groups for t in g.tasks)} for s, groups in splits.items()}
    for (c, s), recs in records.items():
        recs.sort(key=lambda r: order[s][r.task_id])
    if process.count() > 1:
        collectives.agree("the evaluation records and curated repo statistics", records_bytes(records, stats))
    return records, stats


def records_bytes(records: Mapping[tuple[str, str], Sequence[EpisodeRecord]], stats: Mapping) -> bytes:
    """A canonical byte string of :func:`evaluate`'s result (for the cross-process check)."""
    import json

    return json.dumps({"records": [[c, s, [dataclasses.asdict(r) for r in recs]]
                                   for (c, s), recs in sorted(records.items())], "stats": stats},
                      sort_keys=True, default=str).encode()
