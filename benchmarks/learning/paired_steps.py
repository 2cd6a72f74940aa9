"""Do the skills change HOW the reader plays? Paired episode lengths of two conditions of one arm.

    python benchmarks/learning/paired_steps.py CAMPAIGN_DIR [--baseline no_memory] [--arm handwritten]
        [--cap 30] [--out CAMPAIGN_DIR/steps.jsonl]

Success (summarize.py) says whether a game is won; this says whether the skills are *used*: for
every arm folder of CAMPAIGN_DIR that evaluated both conditions on a split, the same games'
steps under ``--arm`` minus under ``--baseline`` -- over all games (a lost game counts the cap)
and over the games won in both conditions --, each with a paired bootstrap 95 % interval
(:func:`skillax.evaluation.stats.paired_bootstrap`), per-type mean steps of the games won in
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

from skillax.evaluation import read_records  # noqa: E402
from skillax.evaluation.stats import paired_bootstrap  # noqa: E402


def paired_steps(baseline: list, arm: list, cap: int) -> dict:
    """Paired step statistics of two record lists over the games both evaluated.
    Raises ValueError when they share no game."""
    b, a = {r.task_id: r for r in baseline}, {r.task_id: r for r in arm}
    ids = sorted(set(b) & set(a))
    if not ids:
        raise ValueError("the two conditions share no game")
    d_all, ci_all = paired_bootstrap([b[i].steps for i in ids], [a[i].steps for i in ids])
    both = [i for i in ids if b[i].won and a[i].won]
    out = {"n": len(ids), "mean_steps": [round(sum(b[i].steps for i in ids) / len(ids), 2),
                                         round(sum(a[i].steps for i in ids) / len(ids), 2)],
           "delta_steps": round(d_all, 3), "delta_steps_ci95": [round(ci_all[0], 3), round(ci_all[1], 3)],
           "won_both": len(both),
           "losses_at_cap": [sum(not r.won and r.steps >= cap for r in x.values()) for x in (b, a)],
           "losses": [sum(not r.won for r in x.values()) for x in (b, a)]}
    if both:
        d, ci = paired_bootstrap([b[i].steps for i in both], [a[i].steps for i in both])
        out.update({"delta_steps_won_both": round(d, 3), "delta_steps_won_both_ci95": [round(ci[0], 3), round(ci[1], 3)],
                    "per_type_won_both": {t: [len(x), round(sum(b[i].steps for i in x) / len(x), 1),
                                              round(sum(a[i].steps for i in x) / len(x), 1)]
                                          for t in sorted({b[i].short_type for i in both})
                                          for x in [[i for i in both if b[i].short_type == t]]}})
    return out


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
            g = run / "eval" / f"{a.arm}__{split}.jsonl"
            if not g.exists():
                continue
            line = {"arm": run.name, "split": split, "baseline": a.baseline, "condition": a.arm,
                    **paired_steps(read_records(f), read_records(g), a.cap),
                    "command": "python benchmarks/learning/paired_steps.py " + " ".join(argv or sys.argv[1:])}
            print(json.dumps(line))
            lines.append(line)
    out = a.out or a.campaign / "steps.jsonl"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
