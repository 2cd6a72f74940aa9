"""SFT warm start from expert trajectories rendered in the play format.

Each expert step becomes one chat transcript ``[system, user(play prompt), assistant]`` with
the assistant answer ``<think>I should {action}.</think><action>{action}</action>`` — the
exact prompt the policy will see during RL (same ``build_play_prompt``, same history window
and admissible list, no skill injected), so a small model learns the output format and the
action vocabulary before RL (DESIGN.md §1.3; Skill1 trains from an SFT'd model).

Experts: ALFWorld's PDDL planner, TextWorld walkthroughs (``agents.envs.experts``). The
expert actions are replayed in the environment to recover the observations and admissible
commands each prompt needs.
"""

from __future__ import annotations

from typing import Callable, Sequence

from skillax.agents.agent_loop import PlayConfig, build_play_prompt
from skillax.agents.envs.base import EnvSpec, Task


def expert_answer(action: str) -> str:
    return f"<think>I should {action}.</think><action>{action}</action>"


def play_demonstrations(tasks: Sequence[Task], spec: EnvSpec, play_cfg: PlayConfig,
                        max_steps: int = 50,
                        episode_demo: Callable[[Task, list[str], str, bool], list[dict]] | None = None
                        ) -> tuple[list[list[dict]], dict]:
    """Transcripts for every step of every won expert trajectory.

    ``episode_demo(task, actions, final_observation, won)``, when given, adds one more
    transcript per replayed expert episode (Skill1: the distil demonstration).
    Returns (transcripts, stats) where stats counts tasks, won experts, steps and episode demos.
    """
    from skillax.agents.envs.experts import expert_trajectory

    env = spec.build()
    out, stats = [], {"tasks": len(tasks), "experts_won": 0, "steps": 0}
    try:
        for task in tasks:
            rec = expert_trajectory(task)
            if not rec.won or rec.error:
                continue
            stats["experts_won"] += 1
            obs, info = env.reset(task)
            history: list[tuple[str, str]] = []
            won = False
            for t, (_, action) in enumerate(rec.steps[:max_steps]):
                msgs = build_play_prompt(task.goal, obs, history, info.get("admissible_commands") or [],
                                         [], t, play_cfg)
                out.append(msgs + [{"role": "assistant", "content": expert_answer(action)}])
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
