"""Persistent compilation cache (``config.compilation_cache``, issue 17): the same run twice,
first with an empty cache folder ("cold", the reference: every program built), then with the
folder the first run filled ("warm": a new process, a new workdir, so nothing else is shared).

    python benchmarks/compile_cache.py                                    # README command 1's job, CPU
    python benchmarks/compile_cache.py --config configs/skill1_alfworld_learning.py \\
        --set --config.steps=3 --set --config.sft.steps=0 ...             # on the GPU

Reports per run: wall seconds of the whole process, the Skill1 loop's sampler builds and their
seconds (``<workdir>/sampler_builds.jsonl``: build + first run of each new shape), and the
first RL step's seconds; then the warm / cold ratios. One JSON line is appended to
``benchmarks/results/compile_cache.jsonl`` with the command and the backend. The physical
limit of a warm build is the trace + lower + read of each program (not measured apart here).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]


def run_once(config: str, sets: list[str], cache: str, workdir: pathlib.Path) -> dict:
    """One fresh process of ``skillax.main`` with ``compilation_cache=cache``; its figures."""
    cmd = [sys.executable, "-m", "skillax.main", "--config", config, "--workdir", str(workdir),
           f"--config.compilation_cache={cache}", *sets]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"run failed (rc {p.returncode}): {shlex.join(cmd)}\n{p.stderr[-3000:]}")
    builds = [json.loads(x) for x in (workdir / "sampler_builds.jsonl").read_text().splitlines() if x.strip()]
    metrics = [json.loads(x) for x in (workdir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    return {"wall_s": round(wall, 1), "sampler_builds": len(builds),
            "sampler_build_s": round(sum(b["seconds"] for b in builds), 2),
            "first_step_s": round(metrics[0]["time/step_s"], 2) if metrics else None,
            "steps": len(metrics)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/default.py")
    ap.add_argument("--set", action="append", default=[], help="one --config.key=value override (repeatable)")
    ap.add_argument("--out", type=pathlib.Path, default=REPO / "benchmarks/results/compile_cache.jsonl")
    a = ap.parse_args(argv)
    import jax

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        cold = run_once(a.config, a.set, str(tmp / "xla"), tmp / "cold")
        entries = len([n for n in os.listdir(tmp / "xla") if n.endswith("-cache")])
        warm = run_once(a.config, a.set, str(tmp / "xla"), tmp / "warm")
    line = {"benchmark": "compile_cache", "backend": jax.default_backend(), "config": a.config, "overrides": a.set,
            "cold": cold, "warm": warm, "cache_entries": entries,
            "warm_over_cold": {k: round(warm[k] / cold[k], 3) for k in ("wall_s", "sampler_build_s", "first_step_s")
                               if cold.get(k) and warm.get(k) is not None},
            "command": "python benchmarks/compile_cache.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d")}
    print(json.dumps(line))
    with open(a.out, "a") as f:
        f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
