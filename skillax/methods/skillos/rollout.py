"""One SkillOS training step's rollouts: Algorithm 1 over task groups, N rollouts each.

For every group G = (x_1 .. x_|G|) and rollout n (DESIGN.md §1.2; SkillOS paper Alg. 1):

    S_n <- ∅                                   (each rollout has its own repo, empty per group;
                                                with init_skills: those skills, issue 22)
    for i = 1 .. |G|:
        S~ <- BM25(x_i, S_n)                   (top-k over name/description/body)
        ξ_i <- π_L(x_i | S~)                   (frozen executor; skills in its play prompt)
        1_ξ <- self-judged correctness
        c_i ~ π_S(· | ξ_i, 1_ξ, S~)            (curator samples tool calls: TRAINED tokens)
        S_n <- ApplyOps(S_n, c_i)              (per-call report; invalid calls skipped, logged)

Everything runs in lock-step over all (group, rollout) pairs of the step: position i of every
live rollout is one batched executor play and one batched curator sampler call. The games of
position i are reset in the pool (``pool.start_batch``) before the BM25 retrieval, so the
resets run behind it. Rewards are filled afterwards by :func:`score_rollouts` (content judge
batched over all final repos).

Repos live on disk under ``root/<tag>-g<group>-n<rollout>/`` (``durable=False``: throw-away)
and are closed over by the returned :class:`Rollout` records; ``state()`` of each is what
checkpoints carry.

Sampling keys (issue 21): at position i every sampled row is keyed on (word, the rollout's rank
among the step's rollouts still live at position i) -- the executor's play turn t on (reserved
word + t, rank), its self-judgement and the curator's call on words reserved for that position
-- with the words reserved for every position of the step's longest group whether or not this
process has a live rollout there. The rank is the row the rollout has in the 1-process call, so
one process samples exactly what it did before issue 21, and several processes (each runs a
contiguous block of the step's groups: ``offset`` = the block's first group, ``group_sizes`` =
the task count of every group of the step) sample what one process does.
:func:`gather_rollouts` then gives every process every rollout, in group order.
A held-out evaluation pass (``skillos.evaluate``) passes :class:`PassKeys` instead: the same
words at every call of the pass (the executor's turn t on play + t, its self-judgement on judge,
the curator at position i on curate + i, all reserved once on the pass's evaluation streams) and
each task's game id as the row, so a game samples what it does in every chunk, condition and arm.
"""
from __future__ import annotations

import collections
import dataclasses
import pathlib
import shutil
import time
from typing import Callable, Sequence

from skillax.evaluation.records import trajectory_fields
from skillax.methods.common.rows import Generation
from skillax.methods.skillos import prompts, rewards
from skillax.methods.skillos.groups import TaskGroup
from skillax.skills.budget import token_counter
from skillax.skills.evidence import EvidenceConfig, truncate_middle
from skillax.skills.importing import ImportReport, seed_repo
from skillax.skills.repo import SkillRepo
from skillax.skills.retrieval import BM25Index
from skillax.skills.tool_calls import ApplyReport, apply_tool_calls

OP_KINDS = ("insert_skill", "update_skill", "delete_skill")


@dataclasses.dataclass(frozen=True)
class RolloutConfig:
    """Knobs of one rollout (embedded-default sizes; the paper configs raise them).

    top_k: skills retrieved per task. retrieval_fields: SKILL.md fields BM25 indexes.
    curator_tokens: max new tokens of one curator call. curator_prefix: prefilled assistant
    text (context, no loss; "" = none). max_prompt_tokens: curator prompt budget (the
    trajectory view is cut in the middle to fit). evidence: trajectory view caps.
    max_skill_chars: per retrieved skill in the curator prompt.
    init_skills: the skills every rollout's repo starts with (``config.init_skills`` read by
    ``skills.importing.read_skills_dir``); None = an empty repo (the paper).
    repo_token_budget: tokens each rollout's repo may hold (``rollout.repo_token_budget``;
    0 = off, the paper): an insert/update call that would push the repo over it fails as an
    invalid call (``skills.repo.SkillRepo``), counted against r_fc. Counted with the curator
    tokenizer on the SKILL.md texts (the same |S| as r_comp).
    """

    top_k: int = 3
    retrieval_fields: tuple[str, ...] = ("name", "description", "body")
    curator_tokens: int = 256
    curator_prefix: str = ""
    max_prompt_tokens: int = 1536
    evidence: EvidenceConfig = EvidenceConfig(units_per_chunk=1, max_steps=8, max_traj_chars=1200)
    max_skill_chars: int = 600
    init_skills: ImportReport | None = None
    repo_token_budget: int = 0


@dataclasses.dataclass
class TaskRecord:
    """What position i of one rollout produced."""

    task_id: str
    retrieved: list[str]
    success: bool
    failed: bool
    n_steps: int
    judged: bool
    evidence_tokens: int
    prompt_tokens: int
    generation: Generation | None
    report: ApplyReport
    n_invalid: int = 0          # format-invalid executor steps
    play: dict = dataclasses.field(default_factory=dict)   # evaluation.records.trajectory_fields


@dataclasses.dataclass
class Rollout:
    """One (group, rollout n): its repo, per-task records and rewards."""

    index: int                  # position in the step (advantage row id)
    group: int                  # group position in the step (advantage group id)
    n: int                      # rollout index within its group
    task_group: TaskGroup
    repo: SkillRepo
    records: list[TaskRecord] = dataclasses.field(default_factory=list)
    repo_tokens: int = 0
    evidence_tokens: int = 0
    r_task: float = 0.0
    r_fc: float = 0.0
    r_cnt: float = 0.0
    r_comp: float = 0.0
    r: float = 0.0

    def generations(self) -> list[Generation]:
        return [rec.generation for rec in self.records if rec.generation is not None]

    def reports(self) -> list[ApplyReport]:
        return [rec.report for rec in self.records]

    def ops(self) -> collections.Counter:
        """Applied calls by function name plus ``invalid`` (calls not applied)."""
        c = collections.Counter()
        for rep in self.reports():
            for call in rep.calls:
                c[call.name if call.applied else "invalid"] += 1
        return c

    def over_budget_calls(self) -> int:
        """Invalid calls refused by the repo's token budget (``CallReport.over_budget``)."""
        return sum(call.over_budget for rep in self.reports() for call in rep.calls)


@dataclasses.dataclass(frozen=True)
class PassKeys:
    """The sampling words of one held-out evaluation pass (``skillos.evaluate``), reserved
    once on its evaluation streams and used by every :func:`rollout_step` call of the pass.

    play: the executor's first turn word (None: an endpoint executor, unkeyed play).
    judge: the executor's self-judgement word (None as ``play``).
    curate: the curator's first position word (position i of a group keys on curate + i).
    games: per group of the call, the key id of each of its tasks (``evaluation_episode``);
      rollout n of a group keys task i on ``games[g][i] * n_rollouts + n``.
    """

    play: int | None
    judge: int | None
    curate: int
    games: tuple[tuple[int, ...], ...] = ()


def _steps(traj) -> list[tuple[str, str]]:
    """(action, observation that followed) pairs of an agent_loop Trajectory."""
    obs_after = [s.observation for s in traj.steps[1:]] + [traj.final_observation]
    return [(s.action or "(no valid action)", o) for s, o in zip(traj.steps, obs_after)]


def _outcome(traj) -> str:
    end = "step cap reached" if traj.truncated else ("episode failed" if traj.failed else "episode ended")
    return f"{traj.n_steps} steps, {end}"


def fit_view(view: str, build_ids: Callable[[str], list[int]], budget: int) -> tuple[str, list[int]]:
    """Largest middle-cut of ``view`` whose prompt ``build_ids(view)`` has <= ``budget`` tokens
    (binary search on characters); the empty view when even that does not fit."""
    ids = build_ids(view)
    if len(ids) <= budget:
        return view, ids
    lo, hi, best = 0, len(view) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        cand = truncate_middle(view, mid)
        c_ids = build_ids(cand)
        if len(c_ids) <= budget:
            best, lo = (cand, c_ids), mid + 1
        else:
            hi = mid - 1
    return best if best is not None else ("", build_ids(""))


def fit_curator_prompt(tok, goal: str, judged: bool, view: str, docs, names, cfg: RolloutConfig
                       ) -> tuple[str, list[int]]:
    """Curator prompt ids within ``cfg.max_prompt_tokens``: the trajectory view is cut first
    (:func:`fit_view`); if even the empty view does not fit, the retrieved skills and then the
    name list are dropped. Raises ValueError when the bare prompt (system + tools) does not fit."""
    for d, n in ((docs, names), ([], names), ([], [])):
        def build(v, d=d, n=n):
            msgs = prompts.curator_messages(goal, judged, v, d, n, max_skill_chars=cfg.max_skill_chars)
            return prompts.curator_prompt_ids(tok, msgs, prefix=cfg.curator_prefix)
        shown, ids = fit_view(view, build, cfg.max_prompt_tokens)
        if len(ids) <= cfg.max_prompt_tokens:
            return shown, ids
    raise ValueError(f"the curator prompt without evidence has {len(ids)} tokens > rollout.max_prompt_tokens="
                     f"{cfg.max_prompt_tokens}; raise it (and model.max_len)")


def new_repo(root: pathlib.Path, seed: ImportReport | None = None, step: int | None = None, *,
             token_budget: int = 0, count_tokens: Callable[[str], int] | None = None) -> SkillRepo:
    """A non-durable repo at ``root`` (any previous content removed): empty, or holding the
    ``seed`` skills (``skills.importing.seed_repo``: original text, changelog op "import");
    ``token_budget`` / ``count_tokens``: its token budget (``skills.repo.SkillRepo``)."""
    if root.exists():
        shutil.rmtree(root)
    repo = SkillRepo(root, durable=False, token_budget=token_budget, count_tokens=count_tokens)
    if seed is not None:
        seed_repo(repo, seed, step=step)
    return repo


def rollout_step(groups: Sequence[TaskGroup], n_rollouts: int, curator, executor, pool,
                 root: str | pathlib.Path, cfg: RolloutConfig, *, step: int = 0, tag: str = "train",
                 timings: collections.Counter | None = None, offset: int = 0,
                 group_sizes: Sequence[int] | None = None, keys: PassKeys | None = None) -> list[Rollout]:
    """Run Algorithm 1 for every group x rollout (module docstring).

    Args:
      groups: task groups of this step. n_rollouts: N rollouts per group (GRPO group size).
      curator: ``PolicySampler`` of the trained policy (``sample``, ``encode``, ``tokenizer``).
      executor: :class:`~skillax.methods.skillos.executor.Executor`.
      pool: ``EnvPool`` for the groups' environment.
      root: folder for the rollouts' repos. step: written to the repos' changelogs.
      timings: Counter receiving ``executor_s``, ``curator_s``, ``retrieve_s`` (seconds).
      offset: the index of ``groups[0]`` among the step's groups (several processes: this
        process's block, ``collectives.share``): rollout ``index`` = (offset + g) * n_rollouts + n
        and ``group`` = offset + g are global, and so are the sampling keys (module docstring).
      group_sizes: the task count of every group of the step, in order (every process passes the
        same list, also one with no group); default those of ``groups`` (then ``offset`` must be 0).
      keys: an evaluation pass's words and game ids (:class:`PassKeys`; ``keys.games`` holds one
        entry per group of ``groups``); None = reserve words per position (training, module docstring).
    Returns:
      ``len(groups) * n_rollouts`` rollouts (group-major), rewards not yet filled.
    Raises:
      ValueError: ``n_rollouts`` < 1, ``group_sizes`` without this block's groups at ``offset``, or
        ``keys.games`` not matching ``groups``.
    """
    if n_rollouts < 1:
        raise ValueError(f"n_rollouts must be >= 1, got {n_rollouts}")
    timings = collections.Counter() if timings is None else timings
    root = pathlib.Path(root)
    tok = curator.tokenizer
    count = token_counter(tok)
    offset = int(offset)
    rolls = [Rollout(index=(offset + g) * n_rollouts + n, group=offset + g, n=n, task_group=grp,
                     repo=new_repo(root / f"{tag}-g{offset + g}-n{n}", cfg.init_skills, step,
                                   token_budget=cfg.repo_token_budget, count_tokens=count))
             for g, grp in enumerate(groups) for n in range(n_rollouts)]
    sizes = [len(g) for g in groups] if group_sizes is None else [int(x) for x in group_sizes]
    if sizes[offset:offset + len(groups)] != [len(g) for g in groups]:
        raise ValueError(f"group_sizes {sizes} do not hold this block's groups {[len(g) for g in groups]} "
                         f"at offset {offset}")
    if keys is not None and [len(x) for x in keys.games] != [len(g) for g in groups]:
        raise ValueError(f"keys.games {keys.games} do not match the groups' sizes {[len(g) for g in groups]}")
    for i in range(max(sizes, default=0)):
        live = [r for r in rolls if i < len(r.task_group)]
        tasks = [r.task_group.tasks[i] for r in live]
        eids = _episode_ids(live, i, sizes, n_rollouts, keys, offset)
        if tasks:
            pool.start_batch(tasks)    # the resets run behind the retrieval

        t0 = time.perf_counter()   # 1. BM25 retrieval from each rollout's own repo
        retrieved = []
        for r, task in zip(live, tasks):
            if len(r.repo) == 0:
                retrieved.append([])
                continue
            index = BM25Index.from_repo(r.repo, fields=cfg.retrieval_fields)
            retrieved.append([r.repo.get(name) for name, _ in index.search(task.goal, k=cfg.top_k)])
        timings["retrieve_s"] += time.perf_counter() - t0

        t0 = time.perf_counter()   # 2. frozen executor plays with the retrieved skills
        trajs = executor.play(pool, tasks, [[prompts.executor_skill_text(d) for d in docs] for docs in retrieved],
                              started=bool(tasks), episode_ids=eids, base=None if keys is None else keys.play)
        views = [prompts.trajectory_view(t.id, t.goal, _steps(tr), _outcome(tr), cfg.evidence)
                 for t, tr in zip(tasks, trajs)]
        judged = executor.judge(trajs, views, episode_ids=eids,            # self-judged correctness
                                word=None if keys is None else keys.judge)
        timings["executor_s"] += time.perf_counter() - t0

        t0 = time.perf_counter()   # 3. curator samples tool calls
        prompt_ids, shown = [], []
        for r, task, docs, v, j in zip(live, tasks, retrieved, views, judged):
            view, ids = fit_curator_prompt(tok, task.goal, j, v, docs, r.repo.names(), cfg)
            prompt_ids.append(ids)
            shown.append(view)
        # reserved also when no rollout is live here
        word = curator.reserve_calls(1) if keys is None else keys.curate + i
        gens = curator.sample(prompt_ids, objective="curate", episodes=[r.index for r in live],
                              max_new_tokens=cfg.curator_tokens, prefix=cfg.curator_prefix,
                              keys=[(word, e) for e in eids])
        timings["curator_s"] += time.perf_counter() - t0

        for r, task, docs, tr, j, view, ids, g in zip(live, tasks, retrieved, trajs, judged, shown,
                                                       prompt_ids, gens):
            report = apply_tool_calls(r.repo, g.text, step=step)   # 4. S <- ApplyOps(S, c_i)
            ev = len(tok.encode(view, add_special_tokens=False)) if view else 0
            r.records.append(TaskRecord(task.id, [d.name for d in docs], bool(tr.won) and not tr.failed,
                                        bool(tr.failed), tr.n_steps, bool(j), ev, len(ids), g, report,
                                        n_invalid=tr.n_invalid, play=trajectory_fields(tr)))
    return rolls


def _episode_ids(live: Sequence[Rollout], i: int, sizes: Sequence[int], n_rollouts: int,
                 keys: PassKeys | None, offset: int) -> list[int]:
    """The row id each live rollout's position ``i`` keys on: its row in the 1-process call
    (training), or its game's id (``keys.games``) x ``n_rollouts`` + n (an evaluation pass)."""
    if keys is not None:
        return [keys.games[r.group - offset][i] * n_rollouts + r.n for r in live]
    before = {g: n_rollouts * sum(1 for x in sizes[:g] if x > i) for g in {r.group for r in live}}
    return [before[r.group] + r.n for r in live]


def _portable(r: Rollout) -> tuple[Rollout, str, dict]:
    """``r`` without its on-disk repo (picklable): (rollout, its repo folder's name, ``state()``)."""
    return dataclasses.replace(r, repo=None), pathlib.Path(r.repo.root).name, r.repo.state()


def gather_rollouts(mine: Sequence[Rollout], root: str | pathlib.Path) -> list[Rollout]:
    """Every process's rollouts, in process order = group order (issue 21); ``mine`` as it is
    with one process. The other processes' repos are rebuilt from their ``state()`` under
    ``root`` (this process's rollout folder) under the owner's folder name
    (``<tag>-g<group>-n<rollout>``: no block of this process has that group), so every process
    then holds the same records and repo contents (a collective: every process calls it)."""
    from skillax import collectives, process

    if process.count() == 1:
        return list(mine)
    root = pathlib.Path(root)
    own = {r.index for r in mine}
    out = []
    for part in collectives.allgather_objects([_portable(r) for r in mine]):
        for r, name, state in part:
            if r.index in own:
                out.append(next(m for m in mine if m.index == r.index))
                continue
            dest = root / name
            if dest.exists():
                shutil.rmtree(dest)
            out.append(dataclasses.replace(r, repo=SkillRepo.from_state(dest, state, durable=False)))
    return out


def rollouts_bytes(rolls: Sequence[Rollout]) -> bytes:
    """A canonical byte string of the scored rollouts (ids, reward terms, repo contents): what
    every process must hold the same of after a step (``collectives.agree``)."""
    import json

    return json.dumps([[r.index, r.group, r.n, r.r, r.r_task, r.r_fc, r.r_cnt, r.r_comp, r.repo_tokens,
                        r.evidence_tokens, [rec.task_id for rec in r.records], r.repo.state()] for r in rolls],
                      sort_keys=True).encode()


def score_rollouts(rolls: Sequence[Rollout], count_tokens: Callable[[str], int], judge=None,
                   weights: rewards.RewardWeights = rewards.RewardWeights(), fc_no_calls: float = 1.0) -> dict:
    """Fill every rollout's reward terms and r (see :mod:`skillax.methods.skillos.rewards`).

    Args:
      count_tokens: text -> tokens (the curator tokenizer), for |S|.
      judge: a ``ContentJudge`` or None (r_cnt off).
      fc_no_calls: r_fc of a rollout that made no call (``reward.fc_no_calls``).
    Returns: ``{"judge_s": seconds, "r_cnt_judge": "on" | "off"}``.
    """
    t0 = time.perf_counter()
    scores = [None] * len(rolls)
    if judge is not None:
        verdicts = judge.judge([[r.repo.text(n) for n in r.repo.names()] for r in rolls])
        scores = [v.score for v in verdicts]
    for r, s in zip(rolls, scores):
        r.repo_tokens = r.repo.size_tokens(count_tokens)
        r.evidence_tokens = sum(rec.evidence_tokens for rec in r.records)
        r.r_task = rewards.task_reward([rec.success for rec in r.records])
        r.r_fc = rewards.function_call_reward(r.reports(), fc_no_calls)
        r.r_cnt = rewards.content_reward(s)
        r.r_comp = rewards.compression_reward(r.repo_tokens, r.evidence_tokens)
        r.r = rewards.total_reward(r.r_task, r.r_fc, r.r_cnt, r.r_comp, weights)
    return {"judge_s": time.perf_counter() - t0, "r_cnt_judge": "on" if judge is not None else "off"}
