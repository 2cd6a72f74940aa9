"""Skill1's SFT warm-start data beyond the play transcripts: distil and query demonstrations
from the expert episodes, and the skills shown in a fraction of the play transcripts.

All deterministic (expert records + a seed), no teacher model (ours; the paper SFTs from a
stronger model's trajectories, which we do not have offline):

* distil demo (``sft.distil_demos``): per won expert episode, the distil prompt over the
  whole trajectory and a task-type-level distil JSON (``prompts.distil_demonstration``).
  ``sft.distil_level``: "episode" (default; ``lessons.lessons``: this game's object and the
  receptacle types it visited) or "generic" (``lessons.generic_lessons``: the goal object as X,
  the target as Y, where such objects usually are from :func:`location_priors`; campaign 11
  measured type-level hand-written skills at +0.08 / +0.11 and the episode-level learned ones
  at about 0). The demo skills of the play and rerank demos follow the same level.
* query demo (``sft.query_demos``): per task, the query prompt and the task-type-level query
  (``prompts.query_demonstration``) that the library's description heads match.
* rerank demo (``sft.rerank_demos``): per won task, candidate demo skills of its own and other
  types, the own-type one ranked first (:func:`rerank_demos`).
* skills in play (``sft.skill_fraction``, issue 18 lever 3): RL injects the top-1 skill into
  the play prompt, which the SFT never showed, so an injected skill was off-distribution. A
  seeded ``skill_fraction`` of the SFT episodes get, in every play prompt, the skill the same
  demo builder distils from *another* game of the same task type; ``irrelevant_fraction`` of
  those get a skill of another type instead (the policy also sees skills it should ignore).
  The expert's answers do not change: the policy learns to act with a skill in context.
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

from skillax.agents.envs.base import Task
from skillax.methods.skill1 import prompts
from skillax.skills.parsers import parse_distil


def expert_steps(rec, max_steps: int) -> tuple[list[tuple[str, str]], bool]:
    """(action, observation it produced) pairs of an expert record (the first ``max_steps``,
    as the SFT replay plays them) and whether that prefix wins the game."""
    obs_before = [o for o, _ in rec.steps] + [rec.final_observation]
    n = min(len(rec.steps), int(max_steps))
    steps = [(rec.steps[t][1], obs_before[t + 1]) for t in range(n)]
    return steps, bool(rec.won) and n == len(rec.steps)


def demo_record(task: Task, rec, max_steps: int, max_chars: int = prompts.DISTIL_PROMPT_CHARS,
                priors: dict | None = None) -> tuple[str, str]:
    """(description_head, strategy) of the skill the deterministic demo builder distils from
    ``rec``, the expert episode of ``task``: what the library would store. ``priors``: the
    generic distil level's location table (:func:`location_priors`; None = episode level)."""
    steps, won = expert_steps(rec, max_steps)
    d = parse_distil(prompts.distil_demonstration(task.goal, task.family, steps, won, max_chars,
                                                  priors)[-1]["content"])
    if d.distil is None:                      # the builder always writes parsable JSON
        raise AssertionError(f"demo distil for {task.id} does not parse: {d.reason}")
    return d.distil.description_head, d.distil.strategy_text()


def demo_skill(task: Task, rec, max_steps: int, max_chars: int = prompts.DISTIL_PROMPT_CHARS,
               priors: dict | None = None) -> str:
    """The skill text (as RL injects it: ``prompts.skill_text``) of :func:`demo_record`."""
    return prompts.skill_text(*demo_record(task, rec, max_steps, max_chars, priors))


def priors_for(cfg, tasks: Sequence[Task], records: dict) -> dict | None:
    """The location table the demos of ``cfg.sft.distil_level`` need: None for "episode" (the
    default), :func:`location_priors` of ``tasks`` for "generic". Raises ValueError otherwise."""
    level = str(cfg.sft.get("distil_level", "episode"))
    if level not in ("episode", "generic"):
        raise ValueError(f"sft.distil_level must be 'episode' or 'generic', got {level!r}")
    return location_priors(tasks, records) if level == "generic" else None


def location_priors(tasks: Sequence[Task], records: dict) -> dict:
    """``sft.distil_level="generic"``: where each goal object (and each task type's) was found
    in the won expert episodes of ``tasks`` (``lessons.location_priors``)."""
    from skillax.methods.skill1.lessons import location_priors as priors_of

    return priors_of((t.goal, t.family, [a for _, a in records[t.id].steps]) for t in tasks if t.id in records)


def skill_assignments(tasks: Sequence[Task], records: dict, fraction: float, irrelevant_fraction: float,
                      seed: int, max_steps: int, priors: dict | None = None) -> dict[str, tuple[str, str]]:
    """{task id: (kind, skill text)} for the SFT episodes that show a skill.

    A task is picked with probability ``fraction`` (seeded per task id); it gets the demo
    skill of another won game of its type ("same_type"), or with probability
    ``irrelevant_fraction`` (or when its type has no other game) one of another type
    ("irrelevant"). ``records``: {task id: ExpertRecord} of the won expert episodes.
    Raises ValueError for fractions outside [0, 1].
    """
    if not 0.0 <= fraction <= 1.0 or not 0.0 <= irrelevant_fraction <= 1.0:
        raise ValueError(f"skill fractions must be in [0, 1], got {fraction}, {irrelevant_fraction}")
    won = [t for t in tasks if t.id in records]
    out: dict[str, tuple[str, str]] = {}
    for t in won:
        rng = random.Random(f"{seed}-skill-{t.id}")
        if rng.random() >= fraction:
            continue
        same = [o for o in won if o.family == t.family and o.id != t.id]
        other = [o for o in won if o.family != t.family]
        if same and (rng.random() >= irrelevant_fraction or not other):
            kind, src = "same_type", rng.choice(same)
        elif other:
            kind, src = "irrelevant", rng.choice(other)
        else:
            continue
        out[t.id] = (kind, demo_skill(src, records[src.id], max_steps, priors=priors))
    return out


def skills_for(assignments: dict[str, tuple[str, str]]) -> Callable[[Task], list[str]]:
    """The ``play_demonstrations`` hook: the task's assigned skill text, else none."""
    return lambda task: [assignments[task.id][1]] if task.id in assignments else []


def rerank_demos(tasks: Sequence[Task], records: dict, *, seed: int, top_k: int, max_steps: int,
                 max_chars: int = prompts.DISTIL_PROMPT_CHARS, priors: dict | None = None) -> list[list[dict]]:
    """Rerank demonstrations (``sft.rerank_demos``): per won task, 2..``top_k`` candidate skills
    in a seeded order -- the demo skill (:func:`demo_record`) of another won game of the task's
    own type and of games of other types (one per type) -- ranked with the own-type skill first,
    the others in the order shown.

    Why (campaign 10, 2026-12-03c): the SFT taught no rerank. Evaluated with the six
    hand-written skills, the warm-start policy chose the other type's skill in 89 of the 90
    games where retrieval returned two candidates (all 39 heating games played with the cooling
    skill, 43 of 46 cooling games with the heating one), as if it copied the prompt's example
    ``<rank>2,1,3</rank>`` (the base SmolLM2-135M-Instruct answers exactly that on every such
    prompt: ``benchmarks/learning/rerank_probe.py``). The paper's rerank reward (NDCG against
    utility order) cannot teach relevance while every utility is 0.5. This target ("own type
    first, the rest in the order shown") is ours, for the warm start only; the RL rerank reward
    stays the paper's. A task whose type has no other won game, or with no game of another
    type, gets none. Measured on the 200 ``valid_train`` demos: the own-type line is the longest
    in about 76 and the shortest in about 42 (about 64 each by chance), a weak length cue.
    Raises ValueError for ``top_k`` < 2.
    """
    if int(top_k) < 2:
        raise ValueError(f"rerank demos need top_k >= 2 (a rerank has >= 2 candidates), got {top_k}")
    won = [t for t in tasks if t.id in records]
    cache: dict[str, tuple[str, str]] = {}

    def skill(t: Task) -> tuple[str, str]:
        if t.id not in cache:
            cache[t.id] = demo_record(t, records[t.id], max_steps, max_chars, priors)
        return cache[t.id]

    out = []
    for t in won:
        rng = random.Random(f"{seed}-rerank-{t.id}")
        same = [o for o in won if o.family == t.family and o.id != t.id]
        # ALFWorld repeats goals across trials: a same-type skill whose example is this very goal
        # would teach string matching, so another goal is preferred where the type has one
        same = [o for o in same if o.goal != t.goal] or same
        families = sorted({o.family for o in won if o.family != t.family})
        if not same or not families:
            continue
        others = rng.sample(families, min(len(families), rng.randint(1, int(top_k) - 1)))
        cands = [rng.choice(same)] + [rng.choice([o for o in won if o.family == f]) for f in others]
        shown = list(range(len(cands)))
        rng.shuffle(shown)                     # shown[j] = which candidate is at position j
        pos_own = shown.index(0)
        order = [pos_own] + [j for j in range(len(shown)) if j != pos_own]
        out.append(prompts.rerank_demonstration(t.goal, [skill(cands[i]) for i in shown], order))
    return out


def extra_transcripts(tasks: Sequence[Task], records: dict, *, distil_demos: bool, query_demos: bool,
                      max_steps: int, max_chars: int = prompts.DISTIL_PROMPT_CHARS,
                      rerank: bool = False, seed: int = 0, top_k: int = 5,
                      priors: dict | None = None) -> list[list[dict]]:
    """Distil demos (one per won expert episode in ``records``), query demos (one per task) and,
    with ``rerank``, the rerank demos of :func:`rerank_demos` (after them). ``priors``: the
    generic distil level (:func:`location_priors`) for the distil and rerank demos."""
    out = []
    for t in tasks:
        if distil_demos and t.id in records:
            steps, won = expert_steps(records[t.id], max_steps)
            out.append(prompts.distil_demonstration(t.goal, t.family, steps, won, max_chars, priors))
        if query_demos:
            out.append(prompts.query_demonstration(t.goal, t.family))
    if rerank:
        out += rerank_demos(tasks, records, seed=seed, top_k=top_k, max_steps=max_steps, max_chars=max_chars,
                            priors=priors)
    return out


def won_records(tasks: Sequence[Task]) -> dict:
    """{task id: ExpertRecord} of the tasks whose expert wins without error (cached planner
    records for ALFWorld: ``agents.envs.experts``)."""
    from skillax.agents.envs.experts import expert_trajectory

    recs = {}
    for t in tasks:
        rec = expert_trajectory(t)
        if rec.won and not rec.error:
            recs[t.id] = rec
    return recs
