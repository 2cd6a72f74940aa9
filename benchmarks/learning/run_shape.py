"""The shape of each RL arm's run, from its ``metrics.jsonl`` (issue 18's campaign records).

    python benchmarks/learning/run_shape.py CAMPAIGN_DIR [--out run_shape.md] [--jsonl run_shape.jsonl]

For every ``CAMPAIGN_DIR/<arm>/metrics.jsonl`` with RL steps (rows carrying ``step``), one row:

* steps, RL minutes (the last step's ``elapsed`` / 60), the median ``time/step_s`` over steps >= 1
  and the mean sampling / environment / update seconds over steps >= 1;
* step 0's seconds and XLA build seconds (``compile/build_s``), and the builds after step 0
  (sum of ``compile/builds`` and ``compile/build_s`` over steps >= 1);
* the final KL to the reference of the util and distil objectives (``util/kl``, ``distil/kl``;
  distil only where the arm trained distil tokens), and the mean util KL over the last 5 steps
  (``kl_util_last5``: campaign 19's movement check K, PROTOCOL.md 2026-12-07 session 29);
* where logged (since 2026-12-07, ``skillax.device_memory``): the device allocator's peak and
  limit over the run, GiB (``peak_gb``, ``limit_gb``; JSON lines only), to size an arm's GPU share;
* where logged (since 2026-12-07 session 32): the mean over steps of ``groups_mixed``, the share
  of a step's tasks whose episodes did not all end alike (the groups with a GRPO success signal;
  ``groups_mixed_mean``, JSON lines only);
* the gradient norm before clipping (``grad_norm``): step 0, the median over steps >= 1, and the
  steps above the arm's ``train.clip_norm`` (``config.json``; 1.0 when absent);
* where the arm logged them (``rl.objective_grad_norms_every``): each objective's part of it,
  ``grad_norm_<objective>`` (objectives named by their ``<objective>/tokens`` keys), median over
  steps >= 1 (``grad_norm_median_after_by_objective``; a table column only when some arm has them);
* training success: the mean of the first and of the last ``--window`` steps (10) and Welch's
  two-sided t-test between them (``scipy.stats.ttest_ind(equal_var=False)``; each step's rate is
  one observation, so this is a weak test of a trend);
* Skill1 arms: NDCG over the first / last ``--window`` steps that reranked, and the distil parse
  rate per half of the run.

The campaign READMEs' run-shape tables (campaign 14 on) are this script's output; before it they
were read from the same keys by hand. Raises SystemExit when no arm has RL steps.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys


def _rows(path: pathlib.Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "step" in r]


def _clip_norm(arm_dir: pathlib.Path) -> float:
    cfg = arm_dir / "config.json"
    if cfg.exists():
        return float(json.loads(cfg.read_text()).get("train", {}).get("clip_norm", 1.0))
    return 1.0


def _objectives(rows: list[dict]) -> list[str]:
    """The trained objectives' names, from their ``<name>/tokens`` keys, in order of appearance."""
    return list(dict.fromkeys(k[:-len("/tokens")] for r in rows for k in r if k.endswith("/tokens")))


def _part_norms(shape: dict) -> str:
    """``util 0.123 / rerank 2.700 / ...``: an arm's per-objective grad norm medians, or –."""
    parts = shape.get("grad_norm_median_after_by_objective", {})
    return " / ".join(f"{name} {_f(v)}" for name, v in parts.items()) or "–"


def _mean(xs) -> float | None:
    xs = list(xs)
    return statistics.fmean(xs) if xs else None


def welch_p(a, b) -> float | None:
    """Two-sided p of Welch's t-test between samples ``a`` and ``b`` (None with < 2 values in
    either, or with zero variance in both)."""
    from scipy.stats import ttest_ind

    if len(a) < 2 or len(b) < 2 or (statistics.pvariance(a) == 0 and statistics.pvariance(b) == 0):
        return None
    return float(ttest_ind(b, a, equal_var=False).pvalue)


def arm_shape(arm_dir: pathlib.Path, window: int = 10) -> dict | None:
    """One arm's run shape (module docstring), or None when its metrics hold no RL step."""
    path = arm_dir / "metrics.jsonl"
    rows = _rows(path) if path.exists() else []
    if not rows:
        return None
    later = rows[1:]
    clip = _clip_norm(arm_dir)
    succ = [float(r["success_rate"]) for r in rows if "success_rate" in r]
    grads = [float(r["grad_norm"]) for r in rows if "grad_norm" in r]
    distils = any(float(r.get("distil/tokens", 0.0)) > 0 for r in rows)   # trained distil tokens
    out = {
        "arm": arm_dir.name,
        "steps": len(rows),
        "rl_min": round(float(rows[-1].get("elapsed", 0.0)) / 60.0, 2),
        "median_step_s": statistics.median(r["time/step_s"] for r in later) if later else None,
        "mean_sampling_s": _mean(r["time/sampling_s"] for r in later if "time/sampling_s" in r),
        "mean_environment_s": _mean(r["time/environment_s"] for r in later if "time/environment_s" in r),
        "mean_update_s": _mean(r["time/update_s"] for r in later if "time/update_s" in r),
        "step0_s": rows[0].get("time/step_s"),
        "step0_build_s": rows[0].get("compile/build_s"),
        "step0_builds": rows[0].get("compile/builds"),
        "builds_after_step0": sum(int(r.get("compile/builds", 0)) for r in later),
        "build_s_after_step0": round(sum(float(r.get("compile/build_s", 0.0)) for r in later), 3),
        "final_kl_util": rows[-1].get("util/kl"),
        "final_kl_distil": rows[-1].get("distil/kl") if distils else None,
        "kl_util_last5": _mean(float(r["util/kl"]) for r in rows[-5:] if "util/kl" in r),
        "clip_norm": clip,
        "grad_norm_step0": grads[0] if grads else None,
        "grad_norm_median_after": statistics.median(grads[1:]) if len(grads) > 1 else None,
        "steps_clipped": sum(g > clip for g in grads),
        "success_first": _mean(succ[:window]),
        "success_last": _mean(succ[-window:]),
        "success_welch_p": welch_p(succ[:window], succ[-window:]),
    }
    mixed = [float(r["groups_mixed"]) for r in rows if "groups_mixed" in r]
    if mixed:
        out["groups_mixed_mean"] = _mean(mixed)
    peaks = [float(r["memory/peak_gb"]) for r in rows if "memory/peak_gb" in r]
    if peaks:
        out["peak_gb"] = max(peaks)
        limits = [float(r["memory/limit_gb"]) for r in rows if "memory/limit_gb" in r]
        out["limit_gb"] = max(limits) if limits else None
    ranked = [float(r["rerank_ndcg"]) for r in rows if r.get("reranked_episodes")]
    if ranked:
        out["ndcg_first"], out["ndcg_last"] = _mean(ranked[:window]), _mean(ranked[-window:])
    parts = {name: [float(r[f"grad_norm_{name}"]) for r in later if f"grad_norm_{name}" in r]
             for name in _objectives(rows) if any(f"grad_norm_{name}" in r for r in rows)}
    if parts:
        out["grad_norm_median_after_by_objective"] = {n: statistics.median(v) if v else None for n, v in parts.items()}
    if distils and all("distil_parse_rate" in r for r in rows):
        parse = [float(r["distil_parse_rate"]) for r in rows]
        half = len(parse) // 2
        out["distil_parse_first_half"] = _mean(parse[:half]) if half else None
        out["distil_parse_second_half"] = _mean(parse[half:])
    return out


def _f(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def table(shapes: list[dict], window: int = 10) -> str:
    """The markdown table of ``shapes`` (one row per arm)."""
    head = ("| arm | RL steps | RL min | median s/step (mean sampling / env / update) | step 0 s (build s) "
            "| builds after step 0 (s) | final KL util / distil | grad norm: step 0 / median after / "
            f"steps clipped | train success first / last {window} (Welch p) | NDCG first / last {window} "
            "| distil parse per half |")
    parts = any("grad_norm_median_after_by_objective" in s for s in shapes)
    if parts:
        head += " grad norm per objective: median after step 0 |"
    lines = [head, "|" + "---|" * (12 if parts else 11)]
    for s in shapes:
        lines.append(
            f"| {s['arm']} | {s['steps']} | {_f(s['rl_min'], 1)} | {_f(s['median_step_s'], 1)} "
            f"({_f(s['mean_sampling_s'], 1)} / {_f(s['mean_environment_s'], 1)} / {_f(s['mean_update_s'], 1)}) "
            f"| {_f(s['step0_s'], 1)} ({_f(s['step0_build_s'], 1)}) "
            f"| {s['builds_after_step0']} ({_f(s['build_s_after_step0'], 1)}) "
            f"| {_f(s['final_kl_util'])} / {_f(s['final_kl_distil'])} "
            f"| {_f(s['grad_norm_step0'])} / {_f(s['grad_norm_median_after'])} / {s['steps_clipped']} of {s['steps']} "
            f"| {_f(s['success_first'])} / {_f(s['success_last'])} ({_f(s['success_welch_p'], 2)}) "
            f"| {_f(s.get('ndcg_first'))} / {_f(s.get('ndcg_last'))} "
            f"| {_f(s.get('distil_parse_first_half'), 2)} / {_f(s.get('distil_parse_second_half'), 2)} |"
            + (f" {_part_norms(s)} |" if parts else ""))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign", type=pathlib.Path)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--out", type=pathlib.Path, help="write the markdown table here too")
    ap.add_argument("--jsonl", type=pathlib.Path, help="write one JSON line per arm here")
    a = ap.parse_args(argv)
    shapes = [s for d in sorted(p for p in a.campaign.iterdir() if p.is_dir())
              if (s := arm_shape(d, a.window)) is not None]
    if not shapes:
        raise SystemExit(f"no arm of {a.campaign} has RL steps in its metrics.jsonl")
    md = table(shapes, a.window)
    sys.stdout.write(md)
    if a.out:
        a.out.write_text(md)
    if a.jsonl:
        cmd = "python benchmarks/learning/run_shape.py " + " ".join(argv if argv is not None else sys.argv[1:])
        a.jsonl.write_text("".join(json.dumps({**s, "command": cmd}) + "\n" for s in shapes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
