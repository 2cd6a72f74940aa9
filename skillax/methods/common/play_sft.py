"""SFT warm start from expert trajectories rendered in the play format.

Each expert step becomes one chat transcript ``[system, user(play prompt), assistant]`` with
the assistant answer ``<think>I should {action}.</think><action>{action}</action>`` (or
``<action>{action}</action>`` with ``PlayConfig(think=False)``) — the
exact prompt the policy will see during RL (same ``build_play_prompt``, same history window
and admissible list; no skill injected unless ``skills_for`` gives the episode one), so a
small model learns the output format and the action vocabulary before RL (DESIGN.md §1.3;
Skill1 trains from an SFT'd model).

Experts: ALFWorld's PDDL planner, TextWorld walkthroughs (``agents.envs.experts``). The
expert actions are replayed in the environment to recover the observations and admissible
commands each prompt needs.
"""

from __future__ import annotations

from typing import Callable, Sequence

from skillax.agents.agent_loop import PlayConfig, build_play_prompt
from skillax.agents.envs.base import EnvSpec, Task


def expert_answer(action: str, think: bool = True) -> str:
    """The SFT target of one expert step: ``<think>I should {action}.</think><action>{action}</action>``
    (``think``; ours, a copy of the action) or ``<action>{action}</action>`` (``PlayConfig.think``
    False)."""
    return f"<think>I should {action}.</think><action>{action}</action>" if think else f"<action>{action}</action>"


def play_demonstrations(tasks: Sequence[Task], spec: EnvSpec, play_cfg: PlayConfig,
                        max_steps: int = 50,
                        episode_demo: Callable[[Task, list[str], str, bool], list[dict]] | None = None,
                        pool=None, skills_for: Callable[[Task], Sequence[str]] | None = None
                        ) -> tuple[list[list[dict]], dict]:
    """Transcripts for every step of every won expert trajectory.

    ``episode_demo(task, actions, final_observation, won)``, when given, adds one more
    transcript per replayed expert episode (Skill1: the distil demonstration).
    ``skills_for(task)``, when given, is the list of skill texts put in every play prompt of
    that task's episode (``build_play_prompt``'s skills block; default none).
    ``pool``: an :class:`~skillax.agents.envs.runner.EnvPool` of ``spec``'s environment; the
    replays then run in lock-step on its workers (:func:`replay_on_pool`: same transcripts, same
    order; a game whose reset or step fails in a worker is skipped instead of raising).
    Returns (transcripts, stats) where stats counts tasks, won experts, steps and episode demos.
    """
    from skillax.agents.envs.experts import expert_trajectory

    if pool is not None:
        return replay_on_pool(tasks, pool, play_cfg, max_steps, episode_demo, skills_for)
    env = spec.build()
    out, stats = [], {"tasks": len(tasks), "experts_won": 0, "steps": 0}
    try:
        for task in tasks:
            rec = expert_trajectory(task)
            if not rec.won or rec.error:
                continue
            stats["experts_won"] += 1
            obs, info = env.reset(task)
            skills = list(skills_for(task)) if skills_for is not None else []
            history: list[tuple[str, str]] = []
            won = False
            for t, (_, action) in enumerate(rec.steps[:max_steps]):
                msgs = build_play_prompt(task.goal, obs, history, info.get("admissible_commands") or [],
                                         skills, t, play_cfg)
                out.append(msgs + [{"role": "assistant", "content": expert_answer(action, play_cfg.think)}])
                history.append((obs, action))
                obs, _, done, info = env.step(action)
                stats["steps"] += 1
                if done:
                    won = bool(info.get("won", False))
                    break
            if episode_demo is not None:
                out.append(episode_demo(task, [a for _, a in history], obs, won))
                stats["episode_demos"] = stats.get("episode_demos", 0) + 1
    finally:
        env.close()
    return out, stats


def replay_on_pool(tasks: Sequence[Task], pool, play_cfg: PlayConfig, max_steps: int = 50,
                   episode_demo: Callable[[Task, list[str], str, bool], list[dict]] | None = None,
                   skills_for: Callable[[Task], Sequence[str]] | None = None
                   ) -> tuple[list[list[dict]], dict]:
    """:func:`play_demonstrations` with the expert replays stepped in lock-step on ``pool``
    (chunks of ``4 * pool.n_workers`` games, one game at a time in-process): ALFWorld resets
    take ~1-3 s, so replaying tens of games one by one costs a minute of a short run."""
    from skillax.agents.envs.experts import expert_trajectory

    runs = []
    for task in tasks:
        rec = expert_trajectory(task)
        if rec.won and not rec.error:
            runs.append((task, rec.actions[:max_steps]))
    out: list[list[dict]] = []
    stats = {"tasks": len(tasks), "experts_won": len(runs), "steps": 0}
    chunk = 4 * pool.n_workers if pool.n_workers else 1
    for c in range(0, len(runs), chunk):
        batch = runs[c:c + chunk]
        skills = [list(skills_for(t)) if skills_for is not None else [] for t, _ in batch]
        cur = pool.reset_batch([t for t, _ in batch])
        obs, infos = [o for o, _ in cur], [i for _, i in cur]
        ok = [not i.get("failed") for i in infos]
        per: list[list[list[dict]]] = [[] for _ in batch]
        history: list[list[tuple[str, str]]] = [[] for _ in batch]
        won = [False] * len(batch)
        t = 0
        while not all(pool.done):
            actions: list[str | None] = [None] * len(batch)
            for j, (task, acts) in enumerate(batch):
                if pool.done[j]:
                    continue
                if t >= len(acts):
                    pool.end_episodes([j])
                    continue
                msgs = build_play_prompt(task.goal, obs[j], history[j], infos[j].get("admissible_commands") or [],
                                         skills[j], t, play_cfg)
                per[j].append(msgs + [{"role": "assistant", "content": expert_answer(acts[t], play_cfg.think)}])
                history[j].append((obs[j], acts[t]))
                actions[j] = acts[t]
            if all(a is None for a in actions):
                break
            for j, (o, _, done, info) in enumerate(pool.step_batch(actions)):
                if actions[j] is None:
                    continue
                if info.get("failed"):
                    ok[j] = False
                obs[j], infos[j] = o, info
                stats["steps"] += 1
                if done:
                    won[j] = bool(info.get("won", False))
            t += 1
        for j, (task, _) in enumerate(batch):
            if not ok[j]:
                stats["failed_replays"] = stats.get("failed_replays", 0) + 1
                continue
            out += per[j]
            if episode_demo is not None:
                out.append(episode_demo(task, [a for _, a in history[j]], obs[j], won[j]))
                stats["episode_demos"] = stats.get("episode_demos", 0) + 1
    return out, stats
