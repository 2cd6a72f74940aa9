"""One Skill-alpha training unit (z_{t-1}, x_t, q_anc, V), batched over lanes (DESIGN.md §1.1).

Per unit, in the paper's order:

1. the frozen worker answers the k anchored queries with z_{t-1}: control score r_ctrl
   (mean over the k queries; k = 1 in the paper);
2. the editor samples G candidate edits A_1..A_G from pi(.|z_{t-1}, x_t) (temperature 1.0);
3. each candidate is parsed and applied to z_{t-1} (a copy: ``SkillDoc`` is immutable), giving
   z_t^(i); the worker answers the same queries with every *valid, non-NOOP* z_t^(i) (same
   verifier) -> r_edit_i. Invalid candidates (parse failure, bad target, ...) and NOOP spend
   no worker call (NOOP's skill is z_{t-1}, so its score is r_ctrl);
4. rollback rewards (:func:`skillax.methods.skill_alpha.reward.rollback_rewards`; the
   "w/o rollback reward" ablation: ``own_score_rewards``). An action outside ``actions``
   (the action-space ablations) is invalid like a parse failure;
5. (caller) GRPO update over the G candidates of each unit
   (:mod:`skillax.methods.skill_alpha.objectives`), and z_t chosen by the carry rule
   (:mod:`skillax.methods.skill_alpha.carry`).

Batching: all editor samples of all units in one sampler call; all worker runs of all units
(control + edits, all anchors) in one ``scorer.score`` call. Several processes (issue 21):
every process builds every unit's prompt and the same job plan; the editor call's rows are
split by units (:func:`sample_edits`) and the scorer call's games by jobs
(``anchors.EnvScorer.play``), each in contiguous blocks, with the 1-process call's keys, and
gathered -- so the results below are the same on every process and equal the 1-process ones. With ``dedupe`` (default) an
edited skill whose worker context is identical to the control's (e.g. an UPDATE that rewrites
a rule with the same text) reuses the control run -- a tie by construction -- and identical
edited skills share one run (exact for a greedy worker; for a sampling worker it gives
identical edits identical rewards).

Failures: a unit whose prompt does not fit even without evidence, or any of whose worker /
judge runs failed, is *skipped*: ``UnitResult.skipped`` holds the reason, it produces no
training rows, its carry is z_{t-1}, and the caller counts it.
"""
from __future__ import annotations

import collections
import dataclasses
import time
from typing import Sequence

from skillax.agents.envs.base import Task
from skillax.methods.common.rows import Generation
from skillax.methods.skill_alpha import carry as carry_mod
from skillax.methods.skill_alpha import prompts
from skillax.methods.skill_alpha.action_space import edit_in_space, parse_actions
from skillax.methods.skill_alpha.reward import REWARDS, anchor_mean, own_score_rewards, rollback_rewards
from skillax.skills.budget import check_budget, token_counter
from skillax.skills.edits import ACTIONS, EditResult
from skillax.skills.skill_md import SkillDoc


@dataclasses.dataclass(frozen=True)
class UnitConfig:
    """Knobs of a unit. group_size G (paper 8); anchors_k queries per unit (paper 1);
    graded: r_edit - r_ctrl instead of the binary rule; carry: see ``carry.CARRY_MODES``;
    max_new_tokens: editor response cap; max_prompt_tokens: editor prompt budget (paper 8192);
    temperature: editor sampling temperature (paper 1.0); dedupe: module docstring;
    prefix: text pre-filled after the assistant header ("" = the editor writes its own
    ``<think>``, as the SFT transcripts teach; "<think>\n" helps an editor without warm start);
    actions: the action space (``action_space``; ablations w/o MERGE/PRUNE, w/o NOOP);
    reward: "rollback" (paper) | "own_score" (ablation "w/o rollback reward", ``reward``);
    token_budget: tokens z may hold (``skill.token_budget``; 0 = off, the paper): an edit that
    would push z over it is invalid (``action_space.restrict_budget``)."""

    group_size: int = 8
    anchors_k: int = 1
    graded: bool = False
    carry: str = "best"
    max_new_tokens: int = 256
    max_prompt_tokens: int = 8192
    temperature: float = 1.0
    dedupe: bool = True
    max_rule_chars: int = 2000
    prefix: str = ""
    actions: tuple[str, ...] = ACTIONS
    reward: str = "rollback"
    token_budget: int = 0

    def __post_init__(self):
        if self.group_size < 1 or self.anchors_k < 1 or self.max_new_tokens < 1 or self.max_prompt_tokens < 16:
            raise ValueError(f"invalid UnitConfig {self}")
        if self.carry not in carry_mod.CARRY_MODES:
            raise ValueError(f"carry must be one of {carry_mod.CARRY_MODES}, got {self.carry!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"unit.reward must be one of {REWARDS}, got {self.reward!r}")
        if self.reward == "own_score" and self.graded:
            raise ValueError("unit.graded applies to the rollback reward only (unit.reward='rollback')")
        object.__setattr__(self, "actions", parse_actions(self.actions))
        object.__setattr__(self, "token_budget", check_budget(self.token_budget))

    @property
    def system(self) -> str:
        """The editor's system turn for this action space."""
        return prompts.editor_system(self.actions)


@dataclasses.dataclass
class UnitInput:
    """One unit's state: z_{t-1}, the evidence units of x_t, the k anchored queries."""

    skill: SkillDoc
    units: tuple[str, ...]
    anchors: tuple[Task, ...]
    kind: str = "trajectory"          # "trajectory" | "document" | "reasoning"
    family: str = ""
    lane: int = 0
    position: int = 0                 # t: chunk index in the evidence stream


@dataclasses.dataclass
class Candidate:
    """One sampled edit: its text (prefix + completion), parse/apply result and scores."""

    text: str
    edit: EditResult
    generation: Generation | None = None
    r_edit: float | None = None
    reward: float = 0.0

    @property
    def action(self) -> str | None:
        return self.edit.kind

    @property
    def valid(self) -> bool:
        return self.edit.valid


@dataclasses.dataclass
class UnitResult:
    input: UnitInput
    candidates: list[Candidate]
    r_ctrl: float | None = None
    skipped: str | None = None
    carry_index: int | None = None
    carry: SkillDoc | None = None
    worker_jobs: int = 0
    prompt_tokens: int = 0
    truncations: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    @property
    def rewards(self) -> list[float]:
        return [c.reward for c in self.candidates]


def build_prompts(inputs: Sequence[UnitInput], tokenizer, cfg: UnitConfig):
    """Editor prompt ids per unit (None when over budget) and the per-unit truncation counters."""
    out = []
    for u in inputs:
        counter: collections.Counter = collections.Counter()
        ids, fit = prompts.fit_editor_prompt(tokenizer, u.skill, u.units, u.kind, cfg.max_prompt_tokens,
                                             counter, cfg.prefix, cfg.system)
        out.append((None if fit.over_budget else ids, counter))
    return out


def score_candidates(inputs: Sequence[UnitInput], texts: Sequence[Sequence[str]], scorer, cfg: UnitConfig,
                     generations: Sequence[Sequence[Generation]] | None = None,
                     skipped: Sequence[str | None] | None = None,
                     count_tokens=None) -> list[UnitResult]:
    """Steps 1, 3, 4 of the unit for given candidate outputs (``texts[u][i]``: prefix + completion).

    All worker runs go to ``scorer.score`` in one call. Returns one :class:`UnitResult` per
    input; ``skipped[u]`` (e.g. "prompt over budget") skips a unit before any worker call.
    ``count_tokens``: text -> tokens for ``cfg.token_budget`` (None = ``skills.budget``'s fallback)."""
    results, jobs, keys = [], [], {}
    need: list[list[int]] = []           # job ids each unit depends on

    def job(ctx: str, anchor: Task, u: int) -> int:
        key = (ctx, anchor.id)
        if cfg.dedupe and key in keys:
            return keys[key]
        keys[key] = len(jobs)
        jobs.append((ctx, anchor))
        results[u].worker_jobs += 1
        return keys[key]

    plan = []                            # per unit: (control job ids, {cand: job ids})
    for u, inp in enumerate(inputs):
        cands = [Candidate(t, edit_in_space(inp.skill, t, cfg.actions, max_rule_chars=cfg.max_rule_chars,
                                            token_budget=cfg.token_budget, count_tokens=count_tokens),
                           generations[u][i] if generations else None) for i, t in enumerate(texts[u])]
        results.append(UnitResult(inp, cands, skipped=skipped[u] if skipped else None, carry=inp.skill))
        if results[u].skipped:
            plan.append(None)
            continue
        if len(inp.anchors) < 1:
            raise ValueError(f"unit {u} has no anchored query")
        ctrl_ctx = prompts.skill_context(inp.skill)
        ctrl = [job(ctrl_ctx, a, u) for a in inp.anchors]
        edits = {}
        for i, c in enumerate(cands):
            if c.valid and c.action != "NOOP":
                ctx = prompts.skill_context(c.edit.skill)
                edits[i] = ctrl if (cfg.dedupe and ctx == ctrl_ctx) else [job(ctx, a, u) for a in inp.anchors]
        plan.append((ctrl, edits))
    scores = scorer.score(jobs) if jobs else []
    if len(scores) != len(jobs):
        raise ValueError(f"scorer returned {len(scores)} scores for {len(jobs)} jobs")
    for res, p in zip(results, plan):
        if p is None:
            continue
        ctrl, edits = p
        used = set(ctrl) | {j for ids in edits.values() for j in ids}
        errs = [scores[j].error for j in sorted(used) if scores[j].error is not None]
        if errs:
            res.skipped = errs[0]
            continue
        res.r_ctrl = anchor_mean([scores[j].score for j in ctrl])
        for i, ids in edits.items():
            res.candidates[i].r_edit = anchor_mean([scores[j].score for j in ids])
        for c in res.candidates:
            if c.valid and c.action == "NOOP":
                c.r_edit = res.r_ctrl
        acts = [c.action for c in res.candidates]
        valid = [c.valid for c in res.candidates]
        r_edit = [c.r_edit for c in res.candidates]
        rewards = (own_score_rewards(acts, valid, r_edit, res.r_ctrl) if cfg.reward == "own_score"
                   else rollback_rewards(acts, valid, r_edit, res.r_ctrl, graded=cfg.graded))
        for c, r in zip(res.candidates, rewards):
            c.reward = float(r)
        res.carry_index = carry_mod.choose_carry(cfg.carry, acts, valid, r_edit, res.r_ctrl)
        if res.carry_index is not None:
            res.carry = res.candidates[res.carry_index].edit.skill
    return results


def sample_edits(built, editor, cfg: UnitConfig) -> list[Generation]:
    """Step 2 for every unit with a prompt (``built``: :func:`build_prompts`): G samples per
    unit in one editor call; row r (unit-major) keys on (w, r), w the call's counter word --
    the key an unkeyed call gives it. Generation ``episode`` = u * G + i for candidate i of unit u.

    Several processes (issue 21): every process builds every unit's prompt and reserves the
    word; each samples the rows of its contiguous block of those units (``collectives.share``;
    a unit's G rows stay on one process) on its sampler replica, with those rows' keys of the
    whole call, and the generations are all-gathered in row order: the 1-process call's rows."""
    from skillax import collectives

    rows = [(u, ids) for u, (ids, _) in enumerate(built) if ids is not None]
    if not rows:
        return []
    G = cfg.group_size
    word = editor.reserve_calls(1)
    lo, hi = collectives.share(len(rows))
    prompts = [ids for _, ids in rows[lo:hi] for _ in range(G)]
    mine = editor.sample(prompts, objective="edit", episodes=[u * G + i for u, _ in rows[lo:hi] for i in range(G)],
                         max_new_tokens=cfg.max_new_tokens, prefix=cfg.prefix, temperature=cfg.temperature,
                         keys=[(word, r) for r in range(lo * G, hi * G)]) if prompts else []
    return collectives.concat(collectives.allgather_objects(mine))


def run_units(inputs: Sequence[UnitInput], editor, scorer, cfg: UnitConfig) -> tuple[list[UnitResult], dict]:
    """The full unit for every input: prompts, one editor call (G samples per unit), one
    scorer call, rewards, carry. ``editor`` is a ``PolicySampler`` (``.tokenizer``,
    ``.sample``). Returns (results, timings in seconds)."""
    t0 = time.perf_counter()
    built = build_prompts(inputs, editor.tokenizer, cfg)
    t1 = time.perf_counter()
    gens = sample_edits(built, editor, cfg)
    t2 = time.perf_counter()
    texts: list[list[str]] = [[] for _ in inputs]
    per_unit: list[list[Generation]] = [[] for _ in inputs]
    for g in gens:
        u = g.episode // cfg.group_size
        texts[u].append(g.text)
        per_unit[u].append(g)
    skipped = [None if ids is not None else "prompt over budget (skill alone exceeds max_prompt_tokens)"
               for ids, _ in built]
    results = score_candidates(inputs, texts, scorer, cfg, per_unit, skipped,
                               count_tokens=token_counter(editor.tokenizer) if cfg.token_budget else None)
    t3 = time.perf_counter()
    for res, (ids, counter) in zip(results, built):
        res.truncations = counter
        res.prompt_tokens = len(ids) if ids is not None else 0
    return results, {"time/prompt": t1 - t0, "time/editor": t2 - t1, "time/worker": t3 - t2}
