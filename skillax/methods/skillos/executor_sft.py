"""The SkillOS executor's play-format SFT warm start, with skills in context for a share of it.

Ours, not the paper's (its executors are Qwen3-8B/32B; ``config`` module docstring). Expert
replays of train games become play transcripts (``methods.common.play_sft``: one
``[system, user(play prompt), assistant(<think>…</think><action>…</action>)]`` per step).
An executor warm-started only on prompts *without* skills sees an injected skill as
off-distribution text at RL/evaluation time (issue 18). So ``sft.play_skill_fraction`` of
the **episodes** (all steps of one game alike, as during play) are shown with a skills block,
rendered exactly as :func:`skillax.agents.agent_loop.build_play_prompt` renders retrieved
skills (:func:`with_skills`), while the target action stays the expert's:

* ``sft.play_relevant_share`` of those episodes get the skill of their own task type, plus
  0..``play.max_skills``−1 skills of other types, in random order (learn to use it);
* the others get 1..``play.max_skills`` skills of other types only (learn to ignore them).

The skills are the curator rule teacher's task-type-level skills
(:func:`skillax.methods.skillos.type_skills.type_skill`), each written from
``sft.play_skill_games`` *other* train games of its type (never from the episode's own game:
that would leak its action sequence). The hand-written skills of
``benchmarks/learning/handwritten_skills`` are never used here: they are the evaluation's
upper bound (the ``handwritten`` condition) and must stay unseen.

A transcript whose skills would push its row past ``sft.play_max_len`` tokens (the answer
would be truncated) is kept without skills and counted (``over_budget``). The returned
statistics give the prompt tokens the skills add and the longest prompt, checked against the
executor's inference budget ``model.max_len − executor.action_tokens``.
"""
from __future__ import annotations

import random
from typing import Sequence

from skillax.agents.agent_loop import PlayConfig, format_skills
from skillax.agents.envs.base import Task
from skillax.methods.skillos import prompts
from skillax.methods.skillos.sft_data import skill_body, skill_name
from skillax.methods.skillos.type_skills import teacher_row, type_skill
from skillax.skills.skill_md import make_skill

_MARK = "_episode_end"


def replay_episodes(tasks: Sequence[Task], spec, play_cfg: PlayConfig, max_steps: int, pool=None
                    ) -> tuple[list[tuple[Task, list[str], list[list[dict]]]], dict]:
    """Expert play transcripts grouped by episode: ``[(task, expert actions played,
    transcripts)]`` in replay order, and the replay statistics (``play_demonstrations``; its
    per-episode hook marks where each episode ends)."""
    from skillax.methods.common.play_sft import play_demonstrations

    by_id = {t.id: t for t in tasks}
    demos, stats = play_demonstrations(
        tasks, spec, play_cfg, max_steps=max_steps, pool=pool,
        episode_demo=lambda task, actions, obs, won: [{"role": _MARK, "content": task.id, "actions": list(actions)}])
    stats.pop("episode_demos", None)
    out, cur = [], []
    for d in demos:
        if d and d[0]["role"] == _MARK:
            out.append((by_id[d[0]["content"]], d[0]["actions"], cur))
            cur = []
        else:
            cur.append(d)
    if cur:
        raise RuntimeError("play transcripts after the last episode marker")
    return out, stats


def with_skills(transcript: Sequence[dict], goal: str, skills: Sequence[str], play_cfg: PlayConfig) -> list[dict]:
    """``transcript`` (made with no skills) with ``skills`` in its play prompt's skills block,
    equal to what ``build_play_prompt(..., skills=skills)`` writes. Raises ValueError when the
    user turn does not start with the task line."""
    msgs = [dict(m) for m in transcript]
    head = f"Task: {goal.strip()}"
    user = msgs[1]["content"]
    if msgs[1]["role"] != "user" or not user.startswith(head + "\n\n"):
        raise ValueError(f"play prompt does not start with {head!r}")
    block = format_skills(skills, play_cfg)
    if block:
        msgs[1]["content"] = head + "\n\n" + block + user[len(head):]
    return msgs


def skill_text(task: Task, games: Sequence[tuple[Task, Sequence[str]]]) -> str | None:
    """The executor-facing text (``prompts.executor_skill_text``) of the task-type skill of
    ``task.family`` written from ``games`` = (task, expert actions); None without games."""
    if not games:
        return None
    made = type_skill(task.family, [teacher_row(t, a) for t, a in games])
    if made is None:   # no object to abstract (TextWorld): the first game's generalised steps
        made = (f"How to do {task.family.replace('_', ' ')} tasks.", skill_body(games[0][1]))
    return prompts.executor_skill_text(make_skill(skill_name(task.family), *made))


def assign_skills(episodes: Sequence[tuple[Task, Sequence[str], list]], fraction: float, relevant_share: float,
                  games_per_skill: int, max_skills: int, seed: int) -> list[tuple[list[str], bool]]:
    """Per episode: (skill texts to show, whether its own type's skill is among them).

    Deterministic in ``seed`` and the task ids. The other-type skills come from one seeded
    pick of ``games_per_skill`` games per type; the own-type skill from ``games_per_skill``
    games of the type other than the episode's own. Raises ValueError for shares outside
    [0, 1] or ``games_per_skill``/``max_skills`` < 1 when skills are requested."""
    if not (0.0 <= fraction <= 1.0 and 0.0 <= relevant_share <= 1.0):
        raise ValueError(f"fraction and relevant_share must be in [0, 1], got {fraction}, {relevant_share}")
    if fraction == 0:
        return [([], False) for _ in episodes]
    if games_per_skill < 1 or max_skills < 1:
        raise ValueError(f"games_per_skill and max_skills must be >= 1, got {games_per_skill}, {max_skills}")
    by_family: dict[str, list[tuple[Task, Sequence[str]]]] = {}
    for t, acts, _ in episodes:
        by_family.setdefault(t.family, []).append((t, acts))
    pool_skill = {}
    for fam, games in sorted(by_family.items()):
        pick = random.Random(f"{seed}|pool|{fam}").sample(games, min(games_per_skill, len(games)))
        pool_skill[fam] = skill_text(games[0][0], pick)
    out = []
    for t, _, _ in episodes:
        rng = random.Random(f"{seed}|{t.id}")
        if rng.random() >= fraction:
            out.append(([], False))
            continue
        n = rng.randint(1, max_skills)
        own = None
        if rng.random() < relevant_share:
            others = [g for g in by_family[t.family] if g[0].id != t.id]
            own = skill_text(t, rng.sample(others, min(games_per_skill, len(others))))
        foreign = sorted(f for f in pool_skill if f != t.family)
        k = min(n - (own is not None), len(foreign))
        skills = [pool_skill[f] for f in rng.sample(foreign, k)] + ([own] if own else [])
        rng.shuffle(skills)
        out.append((skills, own is not None))
    return out


def build_transcripts(episodes, assignment, play_cfg: PlayConfig, count_tokens, max_len: int
                      ) -> tuple[list[list[dict]], dict]:
    """All transcripts with their episode's skills (or without, when the row would pass
    ``max_len`` tokens). ``count_tokens(messages)`` = the row's token count. Returns
    (transcripts, stats): episodes, episodes_with_skills, episodes_with_own_skill,
    transcripts, with_skills, over_budget, mean_added_tokens (per transcript with skills),
    max_tokens (longest row kept)."""
    out: list[list[dict]] = []
    st = {"episodes": len(episodes), "episodes_with_skills": 0, "episodes_with_own_skill": 0,
          "transcripts": 0, "with_skills": 0, "over_budget": 0, "added_tokens": 0, "max_tokens": 0}
    for (task, _, transcripts), (skills, own) in zip(episodes, assignment):
        st["episodes_with_skills"] += bool(skills)
        st["episodes_with_own_skill"] += own
        for tr in transcripts:
            n0 = count_tokens(tr)
            row, n = tr, n0
            if skills:
                cand = with_skills(tr, task.goal, skills, play_cfg)
                n1 = count_tokens(cand)
                if n1 <= max_len:
                    row, n = cand, n1
                    st["with_skills"] += 1
                    st["added_tokens"] += n1 - n0
                else:
                    st["over_budget"] += 1
            st["max_tokens"] = max(st["max_tokens"], n)
            out.append(row)
    st["transcripts"] = len(out)
    st["mean_added_tokens"] = st.pop("added_tokens") / max(st["with_skills"], 1)
    return out, st


def own_skill_places(task: Task, skills: Sequence[str], max_chars: int | None = None) -> list[list[str]]:
    """The searching expert's places per find unit for ``task``: those named by its own task
    type's skill among ``skills`` (the text starting ``"<skill_name(family)>:"``), else [].
    ``max_chars``: the play prompt's per-skill cap (``play.max_skill_chars``): only what the
    prompt shows is followed (a places sentence the cap cuts names no places)."""
    from skillax.methods.skillos.type_skills import find_places

    head = skill_name(task.family) + ":"
    for s in skills:
        if s.startswith(head):
            text = s.strip()
            return find_places(text if max_chars is None or len(text) <= max_chars else text[: max(0, max_chars - 3)])
    return []


def contrast_skills(episodes: Sequence[tuple[Task, Sequence[str], list]], games_per_skill: int, max_skills: int,
                    seed: int) -> tuple[list, list[tuple[list[str], bool]]]:
    """``sft.play_contrast``: every episode three times, with (a) its own type's skill among
    0..``max_skills``-1 other types' (:func:`assign_skills` with both shares 1), (b) 1..``max_skills``
    other types' skills only (relevant share 0, drawn with seed ``seed + 1``), and (c) no
    skill. Returns (episodes repeated as a + b + c, their assignments in the same order).

    Why (issue 18, campaign 6): with one random context per game, each reader saw its own type's
    skill in only ~half of the games (Look: ~9 of 19), and whether a reader learned to follow the
    places varied from seed to seed; the three contexts of one game are counterfactual pairs --
    the same game searched with and without its skill's places. Ours; no paper does this."""
    own = assign_skills(episodes, 1.0, 1.0, games_per_skill, max_skills, seed)
    others = assign_skills(episodes, 1.0, 0.0, games_per_skill, max_skills, seed + 1)
    none = [([], False) for _ in episodes]
    return list(episodes) * 3, own + others + none


def search_transcripts(tasks: Sequence[Task], pool, play_cfg: PlayConfig, max_steps: int, fraction: float,
                       relevant_share: float, games_per_skill: int, seed: int, count_tokens, max_len: int,
                       contrast: bool = False) -> tuple[list[list[dict]], dict]:
    """``sft.play_search``: the executor's play transcripts from the *searching* expert
    (:mod:`skillax.methods.common.search_sft`) instead of planner replays. Skills are assigned
    per episode as :func:`assign_skills` does (from the planner actions of other games); an
    episode with its own type's skill searches in that skill's places first, so its actions
    depend on the skill. Rows longer than ``max_len`` tokens are dropped (``over_budget``: a
    row without its skills would no longer explain its actions). ``contrast``
    (``sft.play_contrast``): every game in the three skill contexts of :func:`contrast_skills`
    instead of one drawn with ``fraction`` / ``relevant_share`` (both then unused). Returns
    (transcripts, stats)."""
    from skillax.agents.envs.experts import expert_trajectory
    from skillax.methods.common.search_sft import rows_in_budget, search_episodes

    recs = [(t, expert_trajectory(t)) for t in tasks]
    planned = [(t, r.actions, []) for t, r in recs if r.won and not r.error]
    n_games = len(planned)
    if contrast:
        planned, assignment = contrast_skills(planned, games_per_skill, play_cfg.max_skills, seed)
    else:
        assignment = assign_skills(planned, fraction, relevant_share, games_per_skill, play_cfg.max_skills, seed)
    skills = [s for s, _ in assignment]
    places = [own_skill_places(t, s, play_cfg.max_skill_chars) for (t, _, _), s in zip(planned, skills)]
    episodes, st = search_episodes([t for t, _, _ in planned], [a for _, a, _ in planned], skills, places,
                                   pool, play_cfg, max_steps)
    kept_idx = st.pop("kept")
    out, kept = rows_in_budget(episodes, [assignment[i][1] for i in kept_idx], count_tokens, max_len)
    st.update({"planner_won": n_games, "episodes_with_skills": sum(bool(skills[i]) for i in kept_idx),
               "episodes_with_own_skill": kept["guided"], "transcripts": kept["transcripts"],
               "over_budget": kept["over_budget"], "max_tokens": kept["max_tokens"],
               "mean_steps_with_own_skill": kept["mean_steps_with"], "mean_steps_without": kept["mean_steps_without"]})
    return out, st
