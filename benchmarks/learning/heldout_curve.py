"""Held-out learning curves of a campaign's Skill1 arms (``eval.at_steps``), paired game by game.

    python benchmarks/learning/heldout_curve.py CAMPAIGN_DIR [--baseline skill1_sft] [--out CAMPAIGN_DIR/heldout.jsonl]

For every arm folder with ``eval_steps/step_<k>/eval/without_library__<split>.jsonl``
(``skillax.methods.skill1.heldout``), one row per (arm, split, point): the point is an RL step k,
or "final" (the arm's end-of-run ``eval/without_library__<split>.jsonl``); its success with a 95 %
Wilson interval, and the paired difference (bootstrap 95 %) against ``--baseline``'s
``without_library`` evaluation of the same games (the SFT warm start: step 0 of every arm's
curve; an arm named ``*_s<k>`` (learning.sh SKILL1_RC_SEEDS) is paired with ``<baseline>_s<k>``,
its own seed's warm start). Campaign 15 needs this: GRPO's +0.224 over SFT was measured after 30
steps only, while its play format changed at step 15. Each row also carries the arm's ``format_flip_step``: the first RL
step whose training ``invalid_action_rate`` (``metrics.jsonl``) is >= 0.5 (None: never, or no
metrics), so a point reads as before or after a format change (campaign 16's secondary reading).
Prints a Markdown table and writes one JSON line per row.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from skillax.evaluation import read_records  # noqa: E402
from skillax.evaluation.stats import paired_delta, wilson_interval  # noqa: E402
from skillax.methods.common.eval_io import condition_path  # noqa: E402
from skillax.rl.metrics import read_jsonl  # noqa: E402

COND = "without_library"
_STEP = re.compile(r"^step_(\d+)$")


def points(arm: pathlib.Path, split: str) -> list[tuple[str, pathlib.Path]]:
    """[(point, records file)] of one arm and split: each ``eval_steps/step_<k>`` in step order,
    then "final" where the end-of-run evaluation exists."""
    steps = sorted((int(m.group(1)), d) for d in (arm / "eval_steps").glob("step_*")
                   if (m := _STEP.match(d.name)) and condition_path(d, COND, split).exists())
    out = [(str(k), condition_path(d, COND, split)) for k, d in steps]
    if condition_path(arm, COND, split).exists():
        out.append(("final", condition_path(arm, COND, split)))
    return out


FLIP_RATE = 0.5


def format_flip_step(arm: pathlib.Path) -> int | None:
    """First RL step of ``arm/metrics.jsonl`` with ``invalid_action_rate`` >= :data:`FLIP_RATE`
    (None when no step has, or there is no metrics file)."""
    f = arm / "metrics.jsonl"
    if not f.exists():
        return None
    return next((int(r["step"]) for r in read_jsonl(f)
                 if float(r.get("invalid_action_rate", 0.0)) >= FLIP_RATE), None)


def curve_rows(campaign: pathlib.Path, baseline: str = "skill1_sft") -> list[dict]:
    """The rows described in the module docstring, for every arm with at least one held-out step
    (arms without ``eval_steps`` are left out). Raises ValueError (``paired_delta``) when a point
    and the baseline evaluated different games."""
    rows = []
    for arm in sorted(p for p in campaign.iterdir() if (p / "eval_steps").is_dir()):
        flip = format_flip_step(arm)
        splits = sorted({f.name.split("__", 1)[1][:-len(".jsonl")]
                         for f in (arm / "eval_steps").glob(f"step_*/eval/{COND}__*.jsonl")})
        seed = re.search(r"_s\d$", arm.name)   # learning.sh SKILL1_RC_SEEDS: each seed's own SFT arm
        base_arm = baseline + seed.group(0) if seed else baseline
        for split in splits:
            base_file = condition_path(campaign / base_arm, COND, split)
            base = read_records(base_file) if base_file.exists() else None
            for point, path in points(arm, split):
                recs = read_records(path)
                won = sum(r.won for r in recs)
                row = {"arm": arm.name, "split": split, "point": point, "n": len(recs), "successes": won,
                       "success": won / len(recs), "ci95": list(wilson_interval(won, len(recs))),
                       "format_flip_step": flip}
                if base is not None:
                    d = paired_delta(base, recs)
                    row.update(baseline=base_arm, delta=d["delta"], delta_ci95=d["delta_ci95"],
                               arm_only=d["arm_only"], baseline_only=d["baseline_only"])
                rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| arm | split | after RL step | success [95% CI] | − baseline [paired bootstrap 95% CI], arm-only / baseline-only "
             "| train invalid >= 0.5 from step |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        d = (f"{r['delta']:+.3f} [{r['delta_ci95'][0]:+.3f}, {r['delta_ci95'][1]:+.3f}], "
             f"{r['arm_only']} / {r['baseline_only']}") if "delta" in r else "–"
        lines.append(f"| {r['arm']} | {r['split']} | {r['point']} | {r['success']:.3f} "
                     f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] | {d} | "
                     f"{'never' if r['format_flip_step'] is None else r['format_flip_step']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("campaign", type=pathlib.Path)
    ap.add_argument("--baseline", default="skill1_sft")
    ap.add_argument("--out", type=pathlib.Path, default=None)
    a = ap.parse_args(argv)
    rows = curve_rows(a.campaign, a.baseline)
    print(table(rows), end="")
    out = a.out if a.out is not None else a.campaign / "heldout.jsonl"
    out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
