"""Which sampling programs an RL step built, and what they cost (issue 17: builds after warm-up).

``Sampler.builds`` holds one dict per call that traced and compiled a new program (its shape key
and ``seconds``, build + first run). The Skill1 loop passes each step's new entries here: they
are appended to ``<workdir>/sampler_builds.jsonl`` (one line per build, with the step) and
summed into two per-step metrics, so a run's log shows when late builds stop and which shapes
they were (``model.batch_buckets`` is the lever for the row axis).
"""

from __future__ import annotations

import json
import pathlib

from skillax import process


def log_builds(builds: list[dict], step: int, workdir: pathlib.Path) -> dict:
    """Append ``builds`` (``Sampler.builds`` entries of one step) to
    ``workdir/sampler_builds.jsonl`` (writer process only) and return
    {"compile/builds": count, "compile/build_s": summed seconds (s, build + first run)}."""
    if builds and process.is_writer():
        with open(pathlib.Path(workdir) / "sampler_builds.jsonl", "a") as f:
            for b in builds:
                f.write(json.dumps({"step": int(step), **b}) + "\n")
    return {"compile/builds": len(builds), "compile/build_s": round(sum(float(b["seconds"]) for b in builds), 3)}
