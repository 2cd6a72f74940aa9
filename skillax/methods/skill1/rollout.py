"""One Skill1 rollout batch: query -> retrieve -> rerank -> play -> reward -> distil.

Reads like the paper's per-task procedure (DESIGN.md §1.3), run over all ``len(tasks) x G``
episodes at once so every policy call is one batched sampler call:

1. the policy writes a retrieval query (prompt ends with an open ``<query>`` tag);
2. a frozen MiniLM encoder scores library skills by cosine; keep cos >= threshold, top-K;
3. the policy orders the candidates (``<rank>3,1,2</rank>``; skipped under 2 candidates);
   the top-1 skill conditions play;
4. multi-turn play (``<think>..</think><action>..</action>``, history of the last k steps)
   until the game ends or the step cap; r(tau) = won. The games' resets are submitted to the
   pool before step 1 (``pool.start_batch``), so they run while the policy writes queries and
   reranks; play is lock-step (``overlap = 1``) or overlapped (``overlap >= 2`` / "auto",
   ``agents.agent_loop.play_episodes``) and samples each turn with per-(turn, episode) keys
   (``methods.common.policy.TurnSampler``), so both give the same episodes;
5. the policy reflects on the whole trajectory and emits the distil JSON.

Library updates (EMA on all K retrieved, n(s) counts, admission, merge, eviction) are applied
by the caller after rewards are computed (``update_library``).

Sampling keys: every policy call is keyed per episode -- row key (call word, episode index) with
the call words reserved up front in a fixed order (query, rerank, one per play turn, distil)
whether or not a stage has rows -- so an episode samples the same tokens whichever episodes
share its calls. With several processes (issue 21) each runs a contiguous block of the step's
tasks (``offset`` = the block's first task) and its episodes carry their global indices, so a
2-process run samples what the 1-process run samples.

Ablations (Skill1 paper, ablation table; ``config.ablation``, see ``config_defaults.skill1``)
are knobs of :class:`RolloutConfig`: ``selection=False`` (w/o Selection: no query and no
rerank; the task text is the query and the top-1 by cosine is used), ``distil="raw"`` (w/o
Distillation: no reflection; a won episode's raw action sequence is stored as the skill),
``use_retrieval=False`` + ``distil="off"`` (w/o Library: no query, retrieval, rerank or distil).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from skillax.agents.agent_loop import PlayConfig, Trajectory, play_episodes
from skillax.agents.envs.base import Task
from skillax.methods.common.policy import TurnSampler
from skillax.methods.common.rows import Generation
from skillax.methods.skill1 import prompts, rewards
from skillax.skills.parsers import DistilParse, RankParse, parse_distil, parse_query, parse_rank


@dataclasses.dataclass
class Episode:
    """Everything one (task, rollout) produced; rewards filled by ``score_episodes``."""

    index: int
    group: int                 # task index within the step (GRPO group id)
    task: Task
    query_gen: Generation | None = None
    query: str = ""
    query_ok: bool = False
    retrieved_ids: list[int] = dataclasses.field(default_factory=list)
    retrieved_utilities: list[float] = dataclasses.field(default_factory=list)  # U at retrieval time
    rank_gen: Generation | None = None
    rank: RankParse | None = None
    chosen_id: int | None = None
    retrieval_on: bool = True  # this condition retrieves (False: w/o Library, eval without_library)
    trajectory: Trajectory | None = None
    play_gens: list[Generation] = dataclasses.field(default_factory=list)
    distil_gen: Generation | None = None
    distil: DistilParse | None = None
    raw_skill: str = ""        # w/o Distillation: the raw action sequence stored instead
    r: float = 0.0
    r_rerank: float = 0.0
    r_distil: float = 0.0

    def generations(self) -> list[Generation]:
        out = [g for g in (self.query_gen, self.rank_gen) if g is not None]
        return out + self.play_gens + ([self.distil_gen] if self.distil_gen is not None else [])


@dataclasses.dataclass(frozen=True)
class RolloutConfig:
    """Token budgets, retrieval knobs and ablation switches of one rollout (CPU default
    sizes; the ALFWorld paper config raises them).

    use_retrieval: query + retrieve + rerank (False: no library read at all).
    selection: the policy writes the query and reranks (False: w/o Selection, module docstring).
    distil: "policy" (the policy's distil JSON) | "raw" (w/o Distillation) | "off" (none).
    distil_prompt_chars: character budget of the trajectory in the distil prompt.
    distil_parse_fail: R_distill on an unparsable distil JSON, "zero" | "floor" | "raw" (``rewards``).
    overlap: play loop, 1 = lock-step | K >= 2 | "auto" (``play_episodes``; same episodes).
    """

    top_k: int = 5
    threshold: float = 0.4
    query_tokens: int = 24
    rank_tokens: int = 16
    action_tokens: int = 48
    distil_tokens: int = 160
    max_steps: int = 50
    use_retrieval: bool = True
    selection: bool = True
    distil: str = "policy"
    distil_prompt_chars: int = prompts.DISTIL_PROMPT_CHARS
    distil_parse_fail: str = "zero"
    overlap: int | str = 1

    def __post_init__(self):
        if self.distil not in DISTIL_MODES:
            raise ValueError(f"RolloutConfig.distil must be one of {DISTIL_MODES}, got {self.distil!r}")
        if self.distil_parse_fail not in rewards.DISTIL_PARSE_FAIL:
            raise ValueError(f"distil_parse_fail must be one of {rewards.DISTIL_PARSE_FAIL}, "
                             f"got {self.distil_parse_fail!r}")


DISTIL_MODES = ("policy", "raw", "off")


def steps_view(trajectory: Trajectory) -> list[tuple[str, str]]:
    """(action, observation it produced) per step of a played trajectory (``Step.observation``
    is the observation *before* the step; the last one's result is ``final_observation``)."""
    after = [s.observation for s in trajectory.steps[1:]] + [trajectory.final_observation]
    return [(s.action or "", o) for s, o in zip(trajectory.steps, after)]


def episode_tasks(tasks: Sequence[Task], group_size: int) -> list[Task]:
    """The pool's batch for ``tasks``: each task ``group_size`` times in a row (episode e plays
    ``tasks[e // group_size]``)."""
    return [t for t in tasks for _ in range(group_size)]


def rollout(tasks: Sequence[Task], group_size: int, policy, library, index, pool,
            play_cfg: PlayConfig, cfg: RolloutConfig, offset: int = 0, started: bool = False) -> list[Episode]:
    """Run ``len(tasks) * group_size`` episodes (the i-th episode plays ``tasks[i // group_size]``)
    on ``pool``, an :class:`~skillax.agents.envs.runner.EnvPool` (its ``start_batch`` / ``poll``
    carry the resets submitted before the query stage).

    ``started``: the caller already submitted these episodes' resets
    (``pool.start_batch(episode_tasks(tasks, group_size))``, e.g. behind the previous step's
    update: ``rollout.prefetch_resets``); RuntimeError when the pool's last batch is not for
    them. Same episodes either way (a reset depends on its task only).

    ``offset``: the index of ``tasks[0]`` among the step's tasks (several processes: this
    process's block, ``collectives.share``); episode indices are then ``(offset + t) *
    group_size + g`` and groups ``offset + t``, global across processes. The policy's call
    counter advances by the same amount for any ``tasks`` (also none: an empty list back)."""
    words = _reserve_words(policy, cfg)
    base = int(offset) * group_size
    eps = [Episode(index=base + e, group=int(offset) + e // group_size, task=tasks[e // group_size],
                   retrieval_on=cfg.use_retrieval) for e in range(len(tasks) * group_size)]
    if not eps:
        return []
    ids = [ep.index for ep in eps]
    tok = policy.tokenizer
    if not started:
        pool.start_batch([ep.task for ep in eps])   # resets run behind the query / retrieval / rerank stage
    elif not pool.started_for([ep.task for ep in eps]):
        raise RuntimeError("rollout(started=True): the pool's last start_batch was not for this step's episodes "
                           f"({len(eps)} episodes of {[t.id for t in tasks][:3]}...)")

    # 1. query (w/o Selection: the task text itself)
    if cfg.use_retrieval and not cfg.selection:
        for ep in eps:
            ep.query, ep.query_ok = ep.task.goal, bool(ep.task.goal.strip())
    elif cfg.use_retrieval:
        qp = [prompts.query_prompt(tok, ep.task.goal) for ep in eps]
        for ep, g in zip(eps, policy.sample(qp, objective="util", episodes=ids,
                                            max_new_tokens=cfg.query_tokens, stop_strings=["</query>"],
                                            prefix=prompts.QUERY_PREFIX, keys=_keys(words["query"], eps))):
            q = parse_query(g.text)
            ep.query_gen, ep.query, ep.query_ok = g, q.query, q.ok

    # 2. dense retrieval (cos >= threshold, top-K); U read now (R_distill, NDCG gains)
    searchable = [ep for ep in eps if ep.query_ok]
    if searchable and len(index) > 0:
        hits = index.search_batch([ep.query for ep in searchable], k=cfg.top_k, threshold=cfg.threshold)
        for ep, h in zip(searchable, hits):
            ep.retrieved_ids = [int(i) for i, _ in h]
            u = library.utilities(ep.retrieved_ids)
            ep.retrieved_ids = [i for i in ep.retrieved_ids if i in u]
            ep.retrieved_utilities = [u[i] for i in ep.retrieved_ids]

    # 3. rerank (only with >= 2 candidates: "<rank>none</rank>" otherwise, nothing generated;
    #    w/o Selection: never, the top-1 by cosine is used)
    to_rank = [ep for ep in eps if len(ep.retrieved_ids) >= 2] if cfg.selection else []
    if to_rank:
        recs = {ep.index: library.get_many(ep.retrieved_ids) for ep in to_rank}
        rp = [prompts.rerank_prompt(tok, ep.task.goal,
                                    [(r.description_head, r.strategy) for r in recs[ep.index]])
              for ep in to_rank]
        gens = policy.sample(rp, objective="rerank", episodes=[ep.index for ep in to_rank],
                             max_new_tokens=cfg.rank_tokens, stop_strings=["</rank>"],
                             prefix=prompts.RANK_PREFIX, keys=_keys(words["rerank"], to_rank))
        for ep, g in zip(to_rank, gens):
            ep.rank_gen = g
            ep.rank = parse_rank(g.text, len(ep.retrieved_ids))
    for ep in eps:
        if ep.retrieved_ids:
            first = ep.rank.permutation[0] if ep.rank is not None else 0
            ep.chosen_id = ep.retrieved_ids[first]

    # 4. play with the top-1 skill injected
    chosen = library.get_many([ep.chosen_id for ep in eps if ep.chosen_id is not None])
    by_id = {r.id: r for r in chosen}
    skills = [[prompts.skill_text(by_id[ep.chosen_id].description_head, by_id[ep.chosen_id].strategy)]
              if ep.chosen_id in by_id else [] for ep in eps]

    generate = words["play"]
    generate.episode_ids = ids
    trajs = play_episodes(pool, [ep.task for ep in eps], generate, skills=skills, cfg=play_cfg,
                          max_steps=cfg.max_steps, overlap=cfg.overlap, started=True)
    for ep, tr in zip(eps, trajs):
        ep.trajectory = tr
        for st in tr.steps:
            g = st.gen["generation"]
            g.episode = ep.index
            ep.play_gens.append(g)

    # 5. distil over the whole trajectory (w/o Distillation: the raw actions, nothing generated)
    if cfg.distil == "policy":
        dp = [prompts.distil_prompt(tok, ep.task.goal, steps_view(ep.trajectory), ep.trajectory.won,
                                    cfg.distil_prompt_chars) for ep in eps]
        for ep, g in zip(eps, policy.sample(dp, objective="distil", episodes=ids,
                                            max_new_tokens=cfg.distil_tokens, prefix=prompts.DISTIL_PREFIX,
                                            keys=_keys(words["distil"], eps))):
            ep.distil_gen, ep.distil = g, parse_distil(g.text)
    elif cfg.distil == "raw":
        for ep in eps:
            acts = [s.action for s in ep.trajectory.steps if s.action]
            ep.raw_skill = ("Actions: " + "; ".join(acts)) if acts else ""
    score_episodes(eps, cfg.distil_parse_fail)
    return eps


def _reserve_words(policy, cfg: RolloutConfig) -> dict:
    """The call words of one rollout, reserved in a fixed order from the config alone (module
    docstring): "query" / "rerank" (with retrieval and selection), "play" (a
    :class:`TurnSampler`: one word per turn), "distil" (``distil = "policy"``); None where the
    stage never samples. One process: the words (and row keys) the unkeyed calls used to take,
    except that the rerank word is now taken also when no episode reranks and rerank rows key
    on their episode (not their position among the reranked rows)."""
    words = {"query": None, "rerank": None, "distil": None}
    if words_before_play(cfg):
        words["query"] = policy.reserve_calls(1)
        words["rerank"] = policy.reserve_calls(1)
    words["play"] = TurnSampler(policy, max_turns=cfg.max_steps, max_new_tokens=cfg.action_tokens,
                                stop_strings=["</action>"], objective="util")
    if cfg.distil == "policy":
        words["distil"] = policy.reserve_calls(1)
    return words


SELECTION_WORDS = 2   # query + rerank: the most call words a rollout reserves before its play turns


def words_before_play(cfg: RolloutConfig) -> int:
    """The call words :func:`_reserve_words` takes before the play turns' words:
    :data:`SELECTION_WORDS` with retrieval and selection, else 0."""
    return SELECTION_WORDS if cfg.use_retrieval and cfg.selection else 0


def _keys(word: int, eps: Sequence[Episode]) -> list[tuple[int, int]]:
    """(call word, episode index) per row: a row's sample does not depend on its batch-mates."""
    return [(int(word), ep.index) for ep in eps]


def score_episodes(eps: Sequence[Episode], distil_parse_fail: str = "zero") -> None:
    """Fill r, R_rerank and R_distill of every episode (``rewards``; a failed environment
    episode is a loss)."""
    for ep in eps:
        tr = ep.trajectory
        ep.r = rewards.utility_reward(bool(tr.won) and not tr.failed)
        if ep.rank is not None:
            ep.r_rerank = rewards.rerank_reward(ep.rank.permutation, ep.retrieved_utilities, ep.rank.parsed_ok)
        ep.r_distil = rewards.distil_reward(ep.r, ep.retrieved_utilities,
                                            parsed_ok=ep.distil is not None and ep.distil.ok,
                                            on_parse_fail=distil_parse_fail)


COUNT_MODES = ("selected", "retrieved")


def update_library(eps: Sequence[Episode], library, step: int, count_mode: str = "selected") -> dict:
    """EMA on all K retrieved skills of each episode (Skill1 paper: U is updated for every
    candidate of B_K), n(s) += 1 for the selected top-1 (``count_mode="selected"``, the
    paper's n(s); ``"retrieved"``: for all K), then admission of won episodes' distils (or,
    w/o Distillation, of their raw action sequences), each recording the episode's task id as
    its source task (``SkillLibrary.add``; merged duplicates append theirs).

    Returns counts: admitted, merged, rejected, evicted (capacity + budget), budget_evicted
    (records evicted to keep the library within ``library.token_budget``), budget_rejected
    (skills that alone exceed it; also in rejected). Raises ValueError for another
    ``count_mode``.
    """
    if count_mode not in COUNT_MODES:
        raise ValueError(f"count_mode must be one of {COUNT_MODES}, got {count_mode!r}")
    counts = {"admitted": 0, "merged": 0, "rejected": 0, "evicted": 0, "budget_evicted": 0, "budget_rejected": 0}
    for ep in eps:
        if ep.retrieved_ids:
            counted = None if count_mode == "retrieved" else [ep.chosen_id]
            library.update_utilities(ep.retrieved_ids, ep.r, counted=counted)
    for ep in eps:
        if ep.distil is not None:
            adm = library.admit(ep.distil, ep.r, scenario=ep.task.goal, step=step, source_task=ep.task.id)
        elif ep.raw_skill:
            adm = library.add(ep.task.goal, ep.task.goal, ep.raw_skill, step=step, attempt_type="raw",
                              source_task=ep.task.id) if ep.r >= 1.0 else None
        else:
            continue
        kind = "rejected" if adm is None else {"inserted": "admitted", "merged": "merged"}.get(adm.status, "rejected")
        counts[kind] += 1
        if adm is not None:
            counts["evicted"] += len(adm.evicted)
            counts["budget_evicted"] += len(adm.budget_evicted)
            counts["budget_rejected"] += int(adm.over_budget)
    return counts
