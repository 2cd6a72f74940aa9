"""Environment latency and random-agent baselines; prints one JSON object per line.

    .venv/bin/python benchmarks/env_latency.py [--alfworld-games 6] [--random-games 30]
        [--tw-games 2] [--workers 2] [--skip-alfworld] [--skip-random]

Measures (wall clock, seconds; machine load inflates them -- the load average is printed):
* ALFWorld (needs ../shared/data/alfworld): game rebuild, env load + first reset, repeat
  reset of a loaded game, step (random admissible actions), reset with the planner on
  (first expert plan); random-admissible-action agent success over a stratified sample
  (50-step cap, played in ``--workers`` processes).
* TextWorld: cold generation (fresh cache dir) per default family, reset, step, walkthrough
  success, random-agent success on the default tasks.
* EnvPool overhead: a no-op step through worker processes vs in-process.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from skillax.agents.envs import EnvSpec, env_spec  # noqa: E402
from skillax.agents.envs.runner import EnvPool  # noqa: E402


def emit(**kw) -> None:
    print(json.dumps(kw), flush=True)


def stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"n": len(xs), "mean_s": round(statistics.fmean(xs), 4), "median_s": round(statistics.median(xs), 4),
            "p90_s": round(xs[int(0.9 * (len(xs) - 1))], 4), "max_s": round(xs[-1], 4)}


def random_agent(tasks, spec, workers: int, seed: int) -> dict:
    """Uniformly random admissible action each step until done; returns success stats."""
    rng = random.Random(seed)
    t0 = time.perf_counter()
    won, steps, failed = [], [], 0
    chunk = max(1, 4 * workers)
    with EnvPool(spec, workers, reset_timeout_s=600, step_timeout_s=120) as pool:
        for c in range(0, len(tasks), chunk):
            batch = tasks[c:c + chunk]
            infos = [info for _, info in pool.reset_batch(batch)]
            n = [0] * len(batch)
            while not all(pool.done):
                acts = [None if pool.done[j] else rng.choice(infos[j]["admissible_commands"] or ["look"])
                        for j in range(len(batch))]
                for j, (_, _, _, info) in enumerate(pool.step_batch(acts)):
                    if acts[j] is not None:
                        infos[j], n[j] = info, n[j] + 1
            won += [bool(i["won"]) for i in infos]
            failed += sum(bool(i.get("failed")) for i in infos)
            steps += n
    return {"games": len(tasks), "success_rate": round(sum(won) / len(won), 4), "wins": sum(won),
            "mean_steps": round(statistics.fmean(steps), 2), "failed": failed,
            "wall_s": round(time.perf_counter() - t0, 1)}


def bench_alfworld(args) -> None:
    from skillax.agents.envs.alfworld import AlfWorldEnv, build_game_file, load_alfworld_tasks, stratified_sample

    try:
        tasks = load_alfworld_tasks()
    except FileNotFoundError as e:
        emit(bench="alfworld", skipped=str(e))
        return
    sample = stratified_sample(tasks, max(1, args.alfworld_games // 3))[: args.alfworld_games]
    rebuild, first, again, step, plan = [], [], [], [], []
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        for t in sample:
            t0 = time.perf_counter()
            build_game_file(t, root=tmp)
            rebuild.append(time.perf_counter() - t0)
            env = AlfWorldEnv(root=tmp)
            t0 = time.perf_counter()
            _, info = env.reset(t)
            first.append(time.perf_counter() - t0)
            for _ in range(10):
                t0 = time.perf_counter()
                _, _, done, info = env.step(rng.choice(info["admissible_commands"]))
                step.append(time.perf_counter() - t0)
                if done:
                    break
            t0 = time.perf_counter()
            env.reset(t)
            again.append(time.perf_counter() - t0)
            env.close()
            penv = AlfWorldEnv(root=tmp, expert_plan=True)
            t0 = time.perf_counter()
            penv.reset(t)
            plan.append(time.perf_counter() - t0)
            penv.close()
    emit(bench="alfworld_rebuild_game_file", **stats(rebuild))
    emit(bench="alfworld_load_and_reset", **stats(first))
    emit(bench="alfworld_reset_loaded_game", **stats(again))
    emit(bench="alfworld_step", **stats(step))
    emit(bench="alfworld_reset_with_planner", **stats(plan))
    if not args.skip_random:
        rs = stratified_sample(tasks, max(1, args.random_games // 3))
        emit(bench="alfworld_random_agent", max_steps=50, **random_agent(rs, env_spec("alfworld"), args.workers, 0))


def bench_textworld(args) -> None:
    from skillax.agents.envs.textworld_env import DEFAULT_FAMILIES, TextWorldEnv, default_textworld_tasks, make_textworld_tasks

    with tempfile.TemporaryDirectory() as tmp:
        for ch, st in DEFAULT_FAMILIES:
            t0 = time.perf_counter()
            make_textworld_tasks(ch, st, range(args.tw_games), root=tmp)
            emit(bench="textworld_generate_cold", challenge=ch, settings=st,
                 per_game_s=round((time.perf_counter() - t0) / args.tw_games, 3))
    tasks = default_textworld_tasks(args.tw_games)
    env = TextWorldEnv()
    resets, steps, wins = [], [], []
    for t in tasks:
        t0 = time.perf_counter()
        env.reset(t)
        resets.append(time.perf_counter() - t0)
        for a in t.payload["walkthrough"]:
            t0 = time.perf_counter()
            _, _, _, info = env.step(a)
            steps.append(time.perf_counter() - t0)
        wins.append(info["won"])
    emit(bench="textworld_reset", **stats(resets))
    emit(bench="textworld_step", **stats(steps))
    emit(bench="textworld_walkthrough", games=len(tasks), success_rate=sum(wins) / len(wins),
         mean_len=statistics.fmean(len(t.payload["walkthrough"]) for t in tasks))
    if not args.skip_random:
        emit(bench="textworld_random_agent", max_steps=20, **random_agent(tasks, env_spec("textworld"), 0, 0))


def bench_pool(args) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "agents"))
    from skillax.agents.envs import Task

    spec = EnvSpec("_toy_env:ToyEnv", {"max_steps": 10_000})
    tasks = [Task(f"t{i}", "toy", "toy", "g") for i in range(8)]
    for workers in (0, args.workers, 8):
        with EnvPool(spec, workers) as pool:
            t0 = time.perf_counter()
            pool.reset_batch(tasks)
            start = time.perf_counter() - t0
            t0 = time.perf_counter()
            for _ in range(50):
                pool.step_batch(["go"] * 8)
            emit(bench="envpool_toy_step_batch", workers=workers, batch=8, first_reset_s=round(start, 3),
                 step_batch_ms=round(1000 * (time.perf_counter() - t0) / 50, 3))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--alfworld-games", type=int, default=6)
    ap.add_argument("--random-games", type=int, default=30)
    ap.add_argument("--tw-games", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-alfworld", action="store_true")
    ap.add_argument("--skip-random", action="store_true")
    args = ap.parse_args()
    emit(bench="machine", cpus=os.cpu_count(), loadavg_1m=round(os.getloadavg()[0], 2), python=sys.version.split()[0])
    bench_pool(args)
    bench_textworld(args)
    if not args.skip_alfworld:
        bench_alfworld(args)
    emit(bench="machine_end", loadavg_1m=round(os.getloadavg()[0], 2))


if __name__ == "__main__":
    main()
