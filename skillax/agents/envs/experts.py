"""Expert trajectories: ALFWorld's PDDL planner and TextWorld walkthroughs, cached as JSON.

* ALFWorld: the game is played with textworld's ``policy_commands`` on (the switch
  ALFWorld's ``AlfredExpert(expert_type="planner")`` turns on): fast-downward re-plans after
  every reset and step and the first command of the fresh plan is played -- the procedure
  of ``../shared/data/alfworld/README.md`` ("Verification"). The handcoded expert
  (``HandCodedTWAgent``) needs ``traj_data.json``, which the pack does not ship, so the
  planner is the one expert here. Planning is slow on some games (up to ~30 s at reset), so
  every record is cached per game (``$SKILLAX_CACHE/experts/alfworld-<logic>/<hash>.json``).
* TextWorld: the walkthrough stored at generation time is replayed.

A record (:class:`ExpertRecord`) is ``task_id``, ``steps`` = list of (observation, action)
with the observation the agent saw *before* the action, ``final_observation``, ``won``,
``n_steps``, ``source`` and ``seconds`` (wall time of the run that produced it).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from typing import Any

from skillax.agents.envs.base import Task, atomic_write_text, cache_dir, read_json


@dataclasses.dataclass
class ExpertRecord:
    """One expert episode (see module docstring)."""

    task_id: str
    goal: str
    steps: list[tuple[str, str]]
    final_observation: str
    won: bool
    source: str
    seconds: float = 0.0
    error: str | None = None

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def actions(self) -> list[str]:
        return [a for _, a in self.steps]

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["steps"] = [{"observation": o, "action": a} for o, a in self.steps]
        d["n_steps"] = self.n_steps
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ExpertRecord":
        try:
            steps = [(s["observation"], s["action"]) for s in d["steps"]]
            return cls(task_id=d["task_id"], goal=d["goal"], steps=steps,
                       final_observation=d["final_observation"], won=bool(d["won"]),
                       source=d["source"], seconds=float(d.get("seconds", 0.0)), error=d.get("error"))
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed expert record ({type(e).__name__}: {e})") from None


def _cache_path(task: Task, tag: str, root: str | None) -> str:
    key = hashlib.sha1(json.dumps([task.id, task.goal, tag], sort_keys=True).encode()).hexdigest()[:20]
    return os.path.join(root or cache_dir("experts"), f"{task.env}-{tag}", f"{key}.json")


def _load_record(path: str) -> ExpertRecord:
    try:
        return ExpertRecord.from_dict(read_json(path))
    except ValueError as e:
        raise ValueError(f"{path}: {e}" if path not in str(e) else str(e)) from None


def _play(env, task: Task, choose, max_steps: int, source: str) -> ExpertRecord:
    t0 = time.perf_counter()
    obs, info = env.reset(task)
    steps: list[tuple[str, str]] = []
    done, error = False, None
    while not done and len(steps) < max_steps:
        action = choose(info, len(steps))
        if action is None:
            error = "expert has no action left before the game was won"
            break
        if action not in info["admissible_commands"]:
            error = f"expert action {action!r} not admissible at step {len(steps)}"
        new_obs, _, done, info = env.step(action)
        steps.append((obs, action))
        obs = new_obs
    return ExpertRecord(task.id, task.goal, steps, obs, bool(info["won"]), source,
                        time.perf_counter() - t0, error)


def follow_reset_plan():
    """An expert policy ``choose(info, t)`` for :func:`_play`: the plan in the reset's
    ``info["expert_plan"]`` (t = 0), then its t-th action; None once it is used up.

    The games are deterministic, so the reset's plan wins without re-planning after every
    step (textworld's ``policy_commands`` re-plans at each step). Same actions in every game
    compared (12 of a stratified valid_train sample, 8 more one by one; the test checks 4);
    time: 5.23 -> 4.26 s a game on 2 workers for the stratified 12
    (``benchmarks/expert_planning.py``; the reset's translation and first plan, ~5 s, is
    most of a game), 21.8 -> 9.4 s for 8 long-horizon games one by one."""
    plan: list[str] = []

    def choose(info: dict, t: int) -> str | None:
        if t == 0:
            plan[:] = list(info.get("expert_plan") or [])
        return plan[t] if t < len(plan) else None

    return choose


def first_action_of_plan(info: dict, t: int) -> str | None:
    """The re-planning expert's ``choose(info, t)``: the first action of the plan in this
    step's ``info["expert_plan"]`` (an env with ``expert_plan=True``), None without one."""
    return (info.get("expert_plan") or [None])[0]


def alfworld_expert(task: Task, logic: str = "wheel", max_steps: int = 60, use_cache: bool = True,
                    root: str | None = None, env=None) -> ExpertRecord:
    """Planner expert for one ALFWorld task (cached): fast-downward's plan at the reset,
    followed to the end (:func:`follow_reset_plan`). ``env`` may be a reused
    ``AlfWorldEnv(expert_plan="reset")`` (or ``True``); otherwise one is built and closed here."""
    from skillax.agents.envs.alfworld import AlfWorldEnv

    path = _cache_path(task, f"planner-{logic}", root)
    if use_cache and os.path.exists(path):
        return _load_record(path)
    own = env is None
    env = env or AlfWorldEnv(max_steps=max_steps, logic=logic, expert_plan="reset")
    try:
        rec = _play(env, task, follow_reset_plan(), max_steps, f"alfworld-planner-{logic}")
    finally:
        if own:
            env.close()
    if use_cache and rec.error is None:
        atomic_write_text(path, json.dumps(rec.to_dict()))
    return rec


def alfworld_experts(tasks: list[Task], n_workers: int = 2, logic: str = "wheel", max_steps: int = 60,
                     use_cache: bool = True, root: str | None = None, chunk: int | None = None,
                     reset_timeout_s: float = 600.0, step_timeout_s: float = 300.0,
                     plan_at: str = "reset") -> list[ExpertRecord]:
    """Planner experts for many ALFWorld games, played in ``n_workers`` processes
    (:class:`~skillax.agents.envs.runner.EnvPool`, ``chunk`` games per lock-step batch,
    default ``4 * n_workers``). Cached records are returned without playing; new ones are
    cached unless they failed. A game whose worker crashed or timed out gets a record with
    ``won=False`` and ``error`` set. ``seconds`` is the batch's wall time shared equally.
    ``plan_at``: "reset" (fast-downward's plan at the reset, followed: :func:`follow_reset_plan`)
    or "step" (a plan after every step, its first action taken: the expert before 2026-12-03,
    same cache key -- pass ``use_cache=False``; ``benchmarks/expert_planning.py``). Raises
    ValueError for another value."""
    from skillax.agents.envs import env_spec
    from skillax.agents.envs.runner import EnvPool

    out: list[ExpertRecord | None] = [None] * len(tasks)
    todo = []
    for i, t in enumerate(tasks):
        path = _cache_path(t, f"planner-{logic}", root)
        if use_cache and os.path.exists(path):
            out[i] = _load_record(path)
        else:
            todo.append(i)
    chunk = chunk or 4 * max(1, n_workers)
    if plan_at not in ("reset", "step"):
        raise ValueError(f"plan_at must be 'reset' or 'step', got {plan_at!r}")
    spec = env_spec("alfworld", logic=logic, expert_plan=plan_at, max_steps=max_steps)
    with EnvPool(spec, n_workers, reset_timeout_s=reset_timeout_s, step_timeout_s=step_timeout_s) as pool:
        for c in range(0, len(todo), chunk):
            idx = todo[c:c + chunk]
            t0 = time.perf_counter()
            batch = [tasks[i] for i in idx]
            steps: list[list[tuple[str, str]]] = [[] for _ in idx]
            errors: list[str | None] = [None] * len(idx)
            cur = pool.reset_batch(batch)
            obs = [o for o, _ in cur]
            infos = [info for _, info in cur]
            choose = [follow_reset_plan() if plan_at == "reset" else first_action_of_plan for _ in idx]
            for j, info in enumerate(infos):
                if info.get("failed"):
                    errors[j] = info["fail_reason"]
            while not all(pool.done):
                actions: list[str | None] = [None] * len(idx)
                for j, info in enumerate(infos):
                    if pool.done[j]:
                        continue
                    actions[j] = choose[j](info, len(steps[j]))
                    if actions[j] is None:
                        errors[j] = "expert has no action left before the game was won"
                        pool.end_episodes([j])
                        continue
                    steps[j].append((obs[j], actions[j]))
                if all(pool.done):
                    break
                for j, (o, _, _, info) in enumerate(pool.step_batch(actions)):
                    if actions[j] is not None:
                        obs[j], infos[j] = o, info
                        if info.get("failed"):
                            errors[j] = info["fail_reason"]
            secs = (time.perf_counter() - t0) / len(idx)
            for j, i in enumerate(idx):
                rec = ExpertRecord(tasks[i].id, tasks[i].goal, steps[j], obs[j], bool(infos[j].get("won")),
                                   f"alfworld-planner-{logic}", secs, errors[j])
                if use_cache and rec.error is None:
                    atomic_write_text(_cache_path(tasks[i], f"planner-{logic}", root), json.dumps(rec.to_dict()))
                out[i] = rec
    return out  # type: ignore[return-value]


def textworld_expert(task: Task, env=None) -> ExpertRecord:
    """Replay the walkthrough stored in ``task.payload["walkthrough"]`` (cheap; not cached)."""
    from skillax.agents.envs.textworld_env import TextWorldEnv

    walk = list(task.payload.get("walkthrough") or [])
    if not walk:
        raise ValueError(f"task {task.id!r} has no walkthrough in its payload")
    own = env is None
    env = env or TextWorldEnv(max_steps=max(len(walk), 1))
    try:
        return _play(env, task, lambda info, t: walk[t] if t < len(walk) else None, len(walk),
                     "textworld-walkthrough")
    finally:
        if own:
            env.close()


def expert_trajectory(task: Task, **kwargs: Any) -> ExpertRecord:
    """Expert episode for any supported task (dispatch on ``task.env``). Raises ValueError
    for an environment without an expert."""
    if task.env == "alfworld":
        return alfworld_expert(task, **kwargs)
    if task.env == "textworld":
        return textworld_expert(task, **kwargs)
    raise ValueError(f"no expert for environment {task.env!r} (task {task.id!r})")
