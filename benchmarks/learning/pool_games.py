"""Pool one paired comparison over seeds game by game (issue 18, from campaign 12 on).

    python benchmarks/learning/pool_games.py --pair BASE=ARM [--pair BASE=ARM ...]
        [--splits valid_unseen,valid_seen] --name NAME [--date D] [--method skill1]
        [--summary benchmarks/results/learning/summary.jsonl] [--write]

Each ``BASE`` and ``ARM`` is ``ARM_FOLDER:CONDITION`` and names one evaluation file per split,
``ARM_FOLDER/eval/CONDITION__SPLIT.jsonl``; one ``--pair`` per run (seed). Example,
Skill1's library effect over campaign 12's two seeds:

    --pair C/skill1_full:without_library=C/skill1_full:with_library
    --pair C/skill1_full1:without_library=C/skill1_full1:with_library

Per split: each game's success averaged over the runs, the mean difference and its paired
bootstrap 95 % interval over games (:func:`skillax.evaluation.stats.pooled_paired_delta`).
``pool_seeds.py`` pools the same comparison with the run as the unit (Student-t over seeds);
with 2-4 seeds that interval is wide by construction, this one asks the narrower question "on
these 134 / 140 games, averaged over the seeds". Both are written down; neither replaces the
per-seed lines. ``--write`` replaces the lines of the same ``--name`` in the summary.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import shlex
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from skillax.evaluation import pooled_paired_delta, read_records  # noqa: E402
from skillax.methods.common.eval_io import condition_path  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]


def parse_side(text: str) -> tuple[pathlib.Path, str]:
    """``ARM_FOLDER:CONDITION`` -> (arm folder, condition); ValueError without both."""
    folder, _, cond = text.rpartition(":")
    if not folder or not cond:
        raise ValueError(f"{text!r}: want ARM_FOLDER:CONDITION")
    return pathlib.Path(folder), cond


def eval_file(side: tuple[pathlib.Path, str], split: str) -> pathlib.Path:
    f = condition_path(side[0], side[1], split)
    if not f.is_file():
        raise FileNotFoundError(f"no evaluation file {f}")
    return f


def pooled_lines(pairs: list[str], splits: list[str], name: str, method: str, date: str, command: str) -> list[dict]:
    """One summary line per split: the comparison pooled over the ``pairs`` (``BASE=ARM``)."""
    sides = []
    for p in pairs:
        if p.count("=") != 1:
            raise ValueError(f"--pair {p!r}: want BASE=ARM")
        base, arm = p.split("=")
        sides.append((parse_side(base), parse_side(arm)))
    out = []
    for split in splits:
        runs = [(read_records(eval_file(b, split)), read_records(eval_file(a, split))) for b, a in sides]
        r = pooled_paired_delta(runs)
        out.append({"method": method, "comparison": name, "split": split, "runs": r["runs"], "n": r["n"],
                    "delta": r["delta"], "delta_ci95": r["delta_ci95"], "per_run": r["per_run"],
                    "arm_only": r["arm_only"], "baseline_only": r["baseline_only"], "mcnemar_p": r["mcnemar_p"],
                    "pairs": pairs, "interval": "paired bootstrap over games of the per-game mean over runs",
                    "command": command, "date": date})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pair", action="append", required=True)
    ap.add_argument("--splits", default="valid_unseen,valid_seen")
    ap.add_argument("--name", required=True)
    ap.add_argument("--method", default="skill1")
    ap.add_argument("--date", default="")
    ap.add_argument("--summary", type=pathlib.Path, default=REPO / "benchmarks/results/learning/summary.jsonl")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    cmd = "python benchmarks/learning/pool_games.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    lines = pooled_lines(a.pair, [s for s in a.splits.split(",") if s], a.name, a.method, a.date, cmd)
    for x in lines:
        print(f"{x['split']}: {x['runs']} runs x {x['n']} games, per run {[round(d, 3) for d in x['per_run']]} -> "
              f"{x['delta']:+.3f} [{x['delta_ci95'][0]:+.3f}, {x['delta_ci95'][1]:+.3f}], "
              f"{x['arm_only']} / {x['baseline_only']} discordant (seed, game) pairs, McNemar p = {x['mcnemar_p']:.3f} "
              f"(optimistic: a game's seeds counted as independent)")
    if a.write:
        raw = [r for r in a.summary.read_text().splitlines() if r.strip()] if a.summary.is_file() else []
        kept = [r for r in raw if json.loads(r).get("comparison") != a.name]
        a.summary.write_text("".join(r + "\n" for r in kept) + "".join(json.dumps(x, sort_keys=True) + "\n"
                                                                      for x in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
