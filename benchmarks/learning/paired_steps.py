"""Do the skills change HOW the reader plays? Paired episode lengths of two conditions of one arm.

    python benchmarks/learning/paired_steps.py CAMPAIGN_DIR [--baseline no_memory] [--arm handwritten]
        [--cap 30] [--out CAMPAIGN_DIR/steps.jsonl]

Success (summarize.py) says whether a game is won; this says whether the skills are *used*: for
every arm folder of CAMPAIGN_DIR that evaluated both conditions on a split, the same games'
steps under ``--arm`` minus under ``--baseline`` -- over all games (a lost game counts the cap)
and over the games won in both conditions --, each with a paired bootstrap 95 % interval
(:func:`skillax.evaluation.stats.paired_steps`), per-type mean steps of the games won in
both, and how many losses ended at the step cap. Campaign 7 (issue 18): the contrast readers
play ~2 steps shorter with the teacher skills while their success does not move. Prints and
writes one JSON line per (arm, split).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from skillax.evaluation import paired_steps, read_records  # noqa: E402
from skillax.methods.common.eval_io import condition_path  # noqa: E402


def _round(v):
    if isinstance(v, float):
        return round(v, 3)
    if isinstance(v, list):
        return [_round(x) for x in v]
    if isinstance(v, dict):
        return {k: _round(x) for k, x in v.items()}
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("campaign", type=pathlib.Path)
    ap.add_argument("--baseline", default="no_memory")
    ap.add_argument("--arm", default="handwritten")
    ap.add_argument("--cap", type=int, default=30, help="the episode step cap of the evaluation (env.max_steps)")
    ap.add_argument("--out", type=pathlib.Path, default=None)
    a = ap.parse_args(argv)
    lines = []
    for run in sorted(p for p in a.campaign.iterdir() if (p / "eval").is_dir()):
        for f in sorted((run / "eval").glob(f"{a.baseline}__*.jsonl")):
            split = f.stem.split("__", 1)[1]
            g = condition_path(run, a.arm, split)
            if not g.exists():
                continue
            st = paired_steps(read_records(f), read_records(g), a.cap)
            st = {k: _round(v) for k, v in st.items()}
            line = {"arm": run.name, "split": split, "baseline": a.baseline, "condition": a.arm, **st,
                    "command": "python benchmarks/learning/paired_steps.py " + " ".join(argv or sys.argv[1:])}
            print(json.dumps(line))
            lines.append(line)
    out = a.out or a.campaign / "steps.jsonl"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
