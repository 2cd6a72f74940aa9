"""Play transcripts of the searching expert, with each episode's skills in its prompts.

:func:`skillax.methods.common.play_sft.play_demonstrations` replays the planner, whose
actions do not depend on the skills in context. Here the expert is
:class:`skillax.agents.envs.search_expert.SearchExpert`: it searches for the object, in the
order the episode's own-task-type skill gives when that skill is in context (its "In earlier
games it was in or on ..." places, :func:`skillax.methods.skillos.type_skills.find_places`),
else in the default order. So the demonstrations differ with and without a relevant skill,
and a reader SFT'd on them learns to follow a skill's places and to ignore other types'
skills (issue 18, campaign 5). Ours; no paper trains its executor this way.
"""
from __future__ import annotations

from typing import Sequence

from skillax.agents.agent_loop import PlayConfig, build_play_prompt
from skillax.agents.envs.base import Task
from skillax.agents.envs.search_expert import SearchExpert
from skillax.methods.common.play_sft import expert_answer


def search_episodes(tasks: Sequence[Task], plans: Sequence[Sequence[str]], skills: Sequence[Sequence[str]],
                    find_places: Sequence[Sequence[Sequence[str]]], pool, play_cfg: PlayConfig,
                    max_steps: int) -> tuple[list[tuple[Task, list[str], list[list[dict]]]], dict]:
    """Play every task with the searching expert on ``pool`` (lock-step, chunks of
    ``4 * pool.n_workers`` games; one at a time in-process) and keep the won episodes.

    Args:
      tasks, plans: the games and their planner actions (same length).
      skills: per task, the skill texts in every play prompt of its episode (may be empty).
      find_places: per task, the expert's places per find unit (``SearchExpert``; ``[]`` =
        default order) -- those of the own-type skill among ``skills``, when there is one.
      max_steps: episode cap (the pool's or the environment's own cap may end it earlier).
    An episode the cap ended is kept (``truncated``: every action is the expert's, and a long
    search without a skill is exactly what the reader will face); one whose plan could not be
    followed (``expert_errors``) or whose environment failed (``failed``) is dropped.
    Entries with the same (task id, plan, places) are played once: the expert and the game are
    deterministic, so their actions and observations are equal, and only the skills rendered
    into the prompts differ (``sft.play_contrast`` plays each game's "other types' skills" and
    "no skill" contexts as one episode: 600 -> 400 episodes for 200 games).
    Returns ([(task, actions played, transcripts)], stats) with stats: tasks, won, truncated,
    expert_errors, failed (per input entry), steps (environment steps played), episodes_played
    (distinct episodes), and ``kept``: the input index of each returned episode (in order;
    callers pop it -- a task may appear several times, e.g. ``sft.play_contrast``).
    Raises ValueError when the per-task lists differ in length.
    """
    n = len(tasks)
    if not (len(plans) == len(skills) == len(find_places) == n):
        raise ValueError(f"tasks/plans/skills/find_places lengths differ: {n}, {len(plans)}, "
                         f"{len(skills)}, {len(find_places)}")
    key_of = [(tasks[i].id, tuple(plans[i]), tuple(tuple(p) for p in find_places[i])) for i in range(n)]
    first: dict = {}
    for i, k in enumerate(key_of):
        first.setdefault(k, i)
    played = _play_searches([tasks[i] for i in first.values()], [plans[i] for i in first.values()],
                            [find_places[i] for i in first.values()], pool, max_steps)
    by_key = dict(zip(first, played))
    out: list[tuple[Task, list[str], list[list[dict]]]] = []
    st = {"tasks": n, "won": 0, "truncated": 0, "expert_errors": 0, "failed": 0,
          "steps": sum(s for _, s, _ in played), "episodes_played": len(played), "kept": []}
    for i in range(n):
        outcome, _, trail = by_key[key_of[i]]
        st[outcome] += 1
        if outcome not in ("won", "truncated"):
            continue
        hist: list[tuple[str, str]] = []
        rows: list[list[dict]] = []
        for t, (obs, adm, a) in enumerate(trail):
            msgs = build_play_prompt(tasks[i].goal, obs, hist, adm, skills[i], t, play_cfg)
            rows.append(msgs + [{"role": "assistant", "content": expert_answer(a, play_cfg.think)}])
            hist.append((obs, a))
        out.append((tasks[i], [a for _, _, a in trail], rows))
        st["kept"].append(i)
    return out, st


def _play_searches(tasks: Sequence[Task], plans: Sequence[Sequence[str]],
                   find_places: Sequence[Sequence[Sequence[str]]], pool,
                   max_steps: int) -> list[tuple[str, int, list[tuple[str, list[str], str]]]]:
    """The searching expert's episodes on ``pool``, lock-step in chunks of ``4 * n_workers``.
    Returns per task (outcome, environment steps, [(observation, admissible, action)]) with
    outcome one of won, truncated (the cap ended it), expert_errors (the plan could not be
    followed), failed (the environment failed)."""
    res: list[tuple[str, int, list[tuple[str, list[str], str]]]] = []
    chunk = 4 * pool.n_workers if pool.n_workers else 1
    for c in range(0, len(tasks), chunk):
        idx = list(range(c, min(c + chunk, len(tasks))))
        experts = [SearchExpert(plans[i], find_places[i]) for i in idx]
        cur = pool.reset_batch([tasks[i] for i in idx])
        obs, infos = [o for o, _ in cur], [inf for _, inf in cur]
        failed = [bool(inf.get("failed")) for inf in infos]
        trail: list[list[tuple[str, list[str], str]]] = [[] for _ in idx]
        steps = [0] * len(idx)
        won = [False] * len(idx)
        over = [False] * len(idx)     # the plan ended (act returned None) before a win
        for _ in range(max_steps):
            actions: list[str | None] = [None] * len(idx)
            for j in range(len(idx)):
                if pool.done[j] or failed[j]:
                    continue
                adm = list(infos[j].get("admissible_commands") or [])
                a = experts[j].act(obs[j], adm)
                if a is None:
                    over[j] = True
                    pool.end_episodes([j])
                    continue
                trail[j].append((obs[j], adm, a))
                actions[j] = a
            if all(a is None for a in actions):
                break
            for j, (o, _, done, info) in enumerate(pool.step_batch(actions)):
                if actions[j] is None:
                    continue
                failed[j] = failed[j] or bool(info.get("failed"))
                obs[j], infos[j] = o, info
                steps[j] += 1
                if done:
                    won[j] = bool(info.get("won", False))
        for j in range(len(idx)):
            outcome = ("failed" if failed[j] else "won" if won[j] else "truncated" if not over[j]
                       else "expert_errors")
            res.append((outcome, steps[j], trail[j]))
        if not all(pool.done):
            pool.end_episodes([j for j in range(len(idx)) if not pool.done[j]])
    return res


def rows_in_budget(episodes: Sequence[tuple[Task, Sequence[str], Sequence[list[dict]]]], guided: Sequence[bool],
                   count_tokens, max_len: int) -> tuple[list[list[dict]], dict]:
    """The rows of :func:`search_episodes`' episodes that fit ``max_len`` tokens, and their
    statistics. ``guided[i]``: episode i's search followed a skill's places (its steps count
    as "with"). ``count_tokens(messages)`` = a row's token count. A row past ``max_len`` is
    dropped, not stripped of its skills: without them it would no longer explain its actions.
    Returns (rows, stats): transcripts, over_budget, max_tokens (longest row kept), guided
    (episodes), mean_steps_with (per guided episode), mean_steps_without (per other episode).
    Raises ValueError when ``guided`` and ``episodes`` differ in length."""
    if len(guided) != len(episodes):
        raise ValueError(f"episodes/guided lengths differ: {len(episodes)}, {len(guided)}")
    out: list[list[dict]] = []
    st = {"transcripts": 0, "over_budget": 0, "max_tokens": 0, "guided": 0}
    steps = [0, 0]                                    # with, without
    for (_, actions, rows), g in zip(episodes, guided):
        st["guided"] += bool(g)
        steps[0 if g else 1] += len(actions)
        for row in rows:
            n = count_tokens(row)
            if n > max_len:
                st["over_budget"] += 1
                continue
            st["max_tokens"] = max(st["max_tokens"], n)
            out.append(row)
    st["transcripts"] = len(out)
    st["mean_steps_with"] = steps[0] / max(st["guided"], 1)
    st["mean_steps_without"] = steps[1] / max(len(episodes) - st["guided"], 1)
    return out, st
