"""``sft.play_search`` for Skill-alpha's frozen worker: play SFT with a rule document in context.

Ours, not the paper's (issue 18, campaign 5's lever for SkillOS carried over). Without it the
worker's play SFT (``loop.play_warmstart``) replays the planner with no skill in context, while
at evaluation the worker reads one rule document (z_T, or z_hand of ``eval.handwritten_dir``):
off-distribution text whose advice none of its demonstrations followed. Here the play
transcripts come from the *searching* expert (:mod:`skillax.methods.common.search_sft`), and
``sft.play_skill_fraction`` of the episodes (all steps of one game alike) carry a rule
document in their play prompt, rendered exactly as the worker sees z at evaluation
(``prompts.skill_context`` -> ``anchors.play_skills`` -> ``build_play_prompt``):

* the document holds the rules of **every** task type present in the games: the SkillOS rule
  teacher's type skill (:func:`skillax.methods.skillos.type_skills.type_skill`) of each type,
  written from ``sft.play_skill_games`` *other* train games of that type (never the episode's
  own game: its places would leak its answer; the same rule as
  ``skillos.executor_sft.assign_skills``), each numbered step one rule tagged with its type
  (:func:`skillax.methods.skill_alpha.handwritten.skill_rules`, as z_hand is made);
* the searching expert looks for the object in the places named by the rules of the
  episode's own type (``type_skills.find_places`` on those rules' texts) first; an episode
  without the document searches in the default order. Own-type rules that the play prompt's
  ``play.max_skill_chars`` cap cuts off are not followed (``own_rules_cut``).

The hand-written skills are never used: they stay the evaluation's upper bound.
"""
from __future__ import annotations

import random
from typing import Sequence

from skillax.agents.agent_loop import PlayConfig, format_skills
from skillax.agents.envs.base import Task
from skillax.methods.skill_alpha.anchors import play_skills
from skillax.methods.skill_alpha.handwritten import skill_rules
from skillax.methods.skill_alpha.prompts import skill_context
from skillax.methods.skillos.sft_data import skill_name
from skillax.methods.skillos.type_skills import find_places, teacher_row, type_skill
from skillax.skills.rules import make_rule_body, with_rules
from skillax.skills.skill_md import make_skill

DOC_NAME = "play-rules"
DOC_DESCRIPTION = "Rules for every task type (play SFT of the worker)."


def type_rules(family: str, games: Sequence[tuple[Task, Sequence[str]]]) -> list[str]:
    """Rule texts of the rule teacher's type skill of ``family`` written from ``games`` =
    (task, planner actions), in order: ``"<family slug>, step i: ..."`` (``skill_rules``);
    [] without games or when the first game has no object to abstract."""
    made = type_skill(family, [teacher_row(t, a) for t, a in games]) if games else None
    if made is None:
        return []
    return skill_rules(make_skill(skill_name(family), *made))


def assign_documents(games: Sequence[tuple[Task, Sequence[str]]], fraction: float, games_per_skill: int,
                     seed: int) -> list[tuple[list[str], list[str]]]:
    """Per game: (rule texts of its document in order, or [] without one; the texts among
    them of its own task type).

    Deterministic in ``seed`` and the task ids. The types are in sorted order; each other
    type's rules come from one seeded pick of ``games_per_skill`` games of that type, the own
    type's from ``games_per_skill`` games of the type other than the episode's own (none: the
    own type has no rules). Raises ValueError for ``fraction`` outside [0, 1] or
    ``games_per_skill`` < 1 when documents are requested."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"sft.play_skill_fraction must be in [0, 1], got {fraction}")
    if fraction == 0:
        return [([], []) for _ in games]
    if games_per_skill < 1:
        raise ValueError(f"sft.play_skill_games must be >= 1, got {games_per_skill}")
    by_family: dict[str, list[tuple[Task, Sequence[str]]]] = {}
    for t, acts in games:
        by_family.setdefault(t.family, []).append((t, acts))
    pool = {f: type_rules(f, random.Random(f"{seed}|pool|{f}").sample(g, min(games_per_skill, len(g))))
            for f, g in sorted(by_family.items())}
    out = []
    for t, _ in games:
        rng = random.Random(f"{seed}|{t.id}")
        if rng.random() >= fraction:
            out.append(([], []))
            continue
        others = [g for g in by_family[t.family] if g[0].id != t.id]
        own = type_rules(t.family, rng.sample(others, min(games_per_skill, len(others))))
        texts = [r for f in sorted(pool) for r in (own if f == t.family else pool[f])]
        out.append((texts, own))
    return out


def contrast_documents(games: Sequence[tuple[Task, Sequence[str]]], games_per_skill: int,
                       seed: int) -> tuple[list[tuple[Task, Sequence[str]]], list[tuple[list[str], list[str]]]]:
    """``sft.play_contrast``: every game three times, with (a) the document of
    :func:`assign_documents` (every type's rules, its own type's included), (b) the same
    document without its own type's rules, and (c) no document. Returns (games repeated as
    a + b + c, their (rule texts, own-type texts) in the same order; b and c have no own texts).

    Why (issue 18, campaign 7, the SkillOS executor's lever carried over): with one random
    context per game a reader sees its own type's rules in only part of its games; the three
    contexts of one game are counterfactual pairs -- the same game searched with and without
    its rules' places, with and without other types' rules. Ours; the paper trains no worker."""
    full = assign_documents(games, 1.0, games_per_skill, seed)
    others = [([r for r in texts if r not in own_set], []) for texts, own in full for own_set in [set(own)]]
    none = [([], []) for _ in games]
    return list(games) * 3, full + others + none


def document_context(texts: Sequence[str]) -> str:
    """The worker's skill context of the rule document ``texts`` ("" for none): the rendered
    rule body of one rule skill, as ``prompts.skill_context`` gives z at evaluation."""
    if not texts:
        return ""
    return skill_context(with_rules(make_skill(DOC_NAME, DOC_DESCRIPTION), make_rule_body(list(texts))))


def search_play_transcripts(tasks: Sequence[Task], plans: Sequence[Sequence[str]], pool, play_cfg: PlayConfig,
                            max_steps: int, fraction: float, games_per_skill: int, seed: int, count_tokens,
                            max_len: int, contrast: bool = False) -> tuple[list[list[dict]], dict]:
    """The worker's play transcripts of ``sft.play_search`` (module docstring).

    Args:
      tasks, plans: the train games and their planner actions (None / [] = the planner did
        not win it: the game is skipped; its actions write no rule either).
      pool: the ``EnvPool`` the searching expert plays on. play_cfg: the worker's
        (``setting.play_config``, one skill). max_steps: episode cap.
      fraction, games_per_skill, seed: :func:`assign_documents`.
      count_tokens(messages), max_len: rows past ``max_len`` tokens are dropped
        (``search_sft.rows_in_budget``).
      contrast: ``sft.play_contrast`` -- every game in the three contexts of
        :func:`contrast_documents` instead of one drawn with ``fraction`` (then unused).
    Returns (transcripts, stats): ``search_episodes``' stats plus planner_won,
    episodes_with_skills (with the document), episodes_guided (their own-type rules named
    places to search), own_rules_cut, transcripts, over_budget, max_tokens,
    mean_steps_with_skill (per guided episode), mean_steps_without.
    Raises ValueError when tasks and plans differ in length."""
    from skillax.methods.common.search_sft import rows_in_budget, search_episodes

    if len(tasks) != len(plans):
        raise ValueError(f"tasks/plans lengths differ: {len(tasks)}, {len(plans)}")
    planned = [(t, list(p)) for t, p in zip(tasks, plans) if p]
    n_games = len(planned)
    if contrast:
        planned, docs = contrast_documents(planned, games_per_skill, seed)
    else:
        docs = assign_documents(planned, fraction, games_per_skill, seed)
    skills, places, cut = [], [], 0
    for texts, own in docs:
        shown = play_skills(document_context(texts))
        block = format_skills(shown, play_cfg)
        visible = [r for r in own if r in block]     # a rule past max_skill_chars is not followed
        cut += len(own) - len(visible)
        skills.append(shown)
        places.append(find_places("\n".join(visible)))
    episodes, st = search_episodes([t for t, _ in planned], [p for _, p in planned], skills, places,
                                   pool, play_cfg, max_steps)
    kept_idx = st.pop("kept")
    out, kept = rows_in_budget(episodes, [any(p for p in places[i]) for i in kept_idx], count_tokens, max_len)
    st.update({"planner_won": n_games, "episodes_with_skills": sum(bool(skills[i]) for i in kept_idx),
               "episodes_guided": kept["guided"], "own_rules_cut": cut, "transcripts": kept["transcripts"],
               "over_budget": kept["over_budget"], "max_tokens": kept["max_tokens"],
               "mean_steps_with_skill": kept["mean_steps_with"], "mean_steps_without": kept["mean_steps_without"]})
    return out, st
