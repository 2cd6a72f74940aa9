"""Fill the expert cache ahead of a run: ALFWorld planner records for whole splits.

    python -m skillax.agents.envs.prefetch --splits valid_train --workers 12

Planning is the slow part of a method's warm start (fast-downward re-plans after every step,
up to ~30 s at a reset); records land in ``$SKILLAX_CACHE/experts/`` (see
:mod:`skillax.agents.envs.experts`) and the runs read them instead of planning. Prints one
JSON line: games, won, failed, seconds.
"""
from __future__ import annotations

import argparse
import json
import time

from skillax.agents.envs.alfworld import load_alfworld_tasks
from skillax.agents.envs.experts import alfworld_experts


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--splits", nargs="+", default=["valid_train"])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--limit", type=int, default=0, help="first N games per call (0: all)")
    ap.add_argument("--logic", default="wheel")
    a = ap.parse_args(argv)
    tasks = load_alfworld_tasks(splits=a.splits)
    if a.limit:
        tasks = tasks[:a.limit]
    t0 = time.perf_counter()
    recs = alfworld_experts(tasks, n_workers=a.workers, logic=a.logic)
    out = {"games": len(recs), "won": sum(r.won for r in recs), "failed": sum(r.error is not None for r in recs),
           "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
