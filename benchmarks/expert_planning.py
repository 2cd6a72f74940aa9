"""ALFWorld planner experts: the reset's plan followed vs a plan after every step.

    python benchmarks/expert_planning.py --per-split 12 --workers 2

Plays a stratified sample of ``valid_train`` (``alfworld.stratified_sample``: task types
round-robin in SHA-1 order) with ``experts.alfworld_experts(..., use_cache=False)`` twice:
``plan_at="step"`` (the reference: textworld's ``policy_commands`` after the reset and every
step, the expert the kit's prefetch ran before; ~40 core-s a game measured on the device)
and ``plan_at="reset"`` (ours: one plan per game). Reports seconds per game of each, how
many games both won, and on how many the two played the same actions. The limit is the
reset alone (loading, PDDL translation and one plan: what any planner expert must pay),
timed as ``plan_at="reset"`` minus its steps: reported as ``fraction_of_limit``.

One JSON line in ``benchmarks/results/expert_planning.jsonl``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import record  # noqa: E402


def main(argv=None) -> dict:
    from skillax.agents.envs.alfworld import AlfWorldEnv, load_alfworld_tasks, stratified_sample
    from skillax.agents.envs.experts import alfworld_experts

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-split", type=int, default=12, help="games of valid_train")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    argv0 = list(sys.argv)      # fast-downward's translator rewrites sys.argv (record() reads it)
    tasks = stratified_sample(load_alfworld_tasks(splits=["valid_train"]), a.per_split)
    wall = {}
    recs = {}
    for mode in ("step", "reset"):
        t0 = time.perf_counter()
        recs[mode] = alfworld_experts(tasks, n_workers=a.workers, use_cache=False, plan_at=mode)
        wall[mode] = time.perf_counter() - t0
    # the limit: every game's reset with its one plan, in one process (no steps)
    env = AlfWorldEnv(max_steps=60, expert_plan="reset")
    try:
        t0 = time.perf_counter()
        for t in tasks:
            env.reset(t)
        resets = time.perf_counter() - t0
    finally:
        env.close()
    n = len(tasks)
    same = sum(x.actions == y.actions for x, y in zip(recs["step"], recs["reset"]))
    won = {m: sum(r.won for r in rs) for m, rs in recs.items()}
    ours, ref = wall["reset"] / n, wall["step"] / n
    limit = resets / n / max(1, a.workers)   # resets spread over the workers
    sys.argv = argv0
    return record("expert_planning", "alfworld_planner_expert",
                  dict(split="valid_train", games=n, workers=a.workers), round(ours, 3), round(ref, 3),
                  "wall seconds per game (ours: plan at reset; reference: plan after every step)",
                  round(limit, 3), round(limit / ours, 3), speedup=round(ref / ours, 2), won=won,
                  same_actions=same, families=sorted({t.family for t in tasks}))


if __name__ == "__main__":
    main()
