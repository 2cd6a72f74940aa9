"""Does training success move during a Skill1 run, once the step's tasks are accounted for?

    python benchmarks/learning/train_trend.py [RUN_DIR ...] [--out train_trend.md] [--jsonl train_trend.jsonl]

Without RUN_DIRs: every ``benchmarks/results/learning/campaign_*/<arm>/`` whose ``config.json`` says
``mode: skill1`` and whose ``metrics.jsonl`` has at least ``--min-steps`` RL steps (8).

A step's ``success_rate`` is the wins of its ``tasks_per_step`` x ``group_size`` episodes, and its 8
tasks differ in difficulty far more than 25 RL steps move the policy: run_shape.py's first-10 vs
last-10 test sees mostly which tasks were drawn. The draw is not lost: the Skill1 loop takes its
tasks from ``methods.common.tasks.TaskStream(train tasks, seed)``, so this script replays the stream
to recover every step's tasks (checked against each step's logged task ids in
``play_samples.jsonl`` where the run has one; a mismatch stops the run's row with the reason).
Then, per run:

* ``raw``: OLS of the step's success on the centred step index, reported as the change over the
  run, slope x (steps - 1), with a two-sided 95 % Student-t interval (n - 2 degrees of freedom);
* ``adjusted``: the same after subtracting the mean difficulty of the step's tasks, each task's
  difficulty estimated from the *other* runs of the same policy model (leave-one-run-out, so the
  run's own trend cannot leak into it): :func:`task_effects`, a least-squares fit of every other
  run's steps as run intercept + run slope + the mean of its tasks' effects, ridge ``--ridge``
  (0.1) on the task effects (a task seen in few steps shrinks to 0);
* per policy model, both changes pooled with the run as the unit (mean and Student-t 95 %
  interval over runs).

Ours (issue 18's learning evidence; not a paper equation). Since 2026-12-07 the loop also logs
every task's wins per step (``play_samples.jsonl`` ``outcomes``), which a per-task model can use
once runs carry them; this script reads steps only.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np
from scipy import stats

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks/results/learning"


def linear_trend(y, offset=None) -> dict:
    """OLS of ``y`` on [1, centred step index], after subtracting ``offset`` (a known per-step
    part, e.g. the step's task difficulty; None = 0).

    y, offset: (n,) float, one value per RL step in step order. Returns {"change": slope x (n - 1),
    "lo", "hi": its two-sided 95 % Student-t interval (n - 2 degrees of freedom), "resid_sd": the
    residual standard deviation, "n": n}. Raises ValueError for n < 3 or a non-finite value."""
    y = np.asarray(y, dtype=float)
    if offset is not None:
        y = y - np.asarray(offset, dtype=float)
    n = len(y)
    if n < 3 or not np.all(np.isfinite(y)):
        raise ValueError(f"a trend needs >= 3 finite values, got {n} ({y.tolist()[:5]}...)")
    s = np.arange(n) - (n - 1) / 2
    slope = float(s @ (y - y.mean()) / (s @ s))
    res = y - y.mean() - slope * s
    resid_sd = float(np.sqrt(res @ res / (n - 2)))
    half = float(stats.t.ppf(0.975, n - 2)) * resid_sd / float(np.sqrt(s @ s)) * (n - 1)
    change = slope * (n - 1)
    return {"change": change, "lo": change - half, "hi": change + half, "resid_sd": resid_sd, "n": n}


def task_effects(runs: list[dict], n_tasks: int, ridge: float = 0.1) -> np.ndarray:
    """Per-task difficulty from other runs' step successes.

    runs: dicts with "tasks" (n_steps, T) int task indices and "y" (n_steps,) step success. The
    model: y[r, s] = a_r + b_r (s - centre_r) + mean_{t in step s} delta_t, least squares with
    ``ridge`` x ||delta||^2 (delta is identified only up to a constant shared with the a_r; the
    ridge pins it and shrinks tasks seen in few steps toward 0). Returns delta, (n_tasks,) float.
    Raises ValueError on no runs."""
    if not runs:
        raise ValueError("task_effects needs at least one other run")
    cols = n_tasks + 2 * len(runs)
    rows, ys = [], []
    for j, r in enumerate(runs):
        tasks, y = np.asarray(r["tasks"]), np.asarray(r["y"], dtype=float)
        centred = np.arange(len(y)) - (len(y) - 1) / 2
        for k in range(len(y)):
            row = np.zeros(cols)
            np.add.at(row, tasks[k], 1.0 / tasks.shape[1])
            row[n_tasks + 2 * j], row[n_tasks + 2 * j + 1] = 1.0, centred[k]
            rows.append(row)
            ys.append(y[k])
    a, b = np.array(rows), np.array(ys)
    penalty = np.zeros(cols)
    penalty[:n_tasks] = ridge
    return np.linalg.solve(a.T @ a + np.diag(penalty), a.T @ b)[:n_tasks]


def pooled(changes) -> dict:
    """Mean of per-run changes with a two-sided 95 % Student-t interval over runs (the run as
    the unit): {"mean", "lo", "hi", "sd", "runs"}; lo = hi = mean for one run."""
    v = np.asarray(changes, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return {"mean": m, "lo": m, "hi": m, "sd": 0.0, "runs": len(v)}
    sd = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.975, len(v) - 1)) * sd / np.sqrt(len(v))
    return {"mean": m, "lo": m - half, "hi": m + half, "sd": sd, "runs": len(v)}


def run_steps(arm_dir: pathlib.Path, task_cache: dict) -> dict:
    """One Skill1 run's steps: {"run", "model", "seed", "objective", "ablation", "lr", "tasks"
    (n_steps, T) indices into the run's train tasks, "y" (n_steps,) success_rate, "n_tasks",
    "checked": logged task ids that matched the replayed stream}. Raises ValueError when the
    replayed stream disagrees with ``play_samples.jsonl`` (task ids in ``samples`` / ``outcomes``)."""
    import ml_collections

    from skillax.methods.common import tasks as task_lib

    cfg = ml_collections.ConfigDict(json.loads((arm_dir / "config.json").read_text()))
    rows = [json.loads(x) for x in (arm_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    rows = sorted((r for r in rows if "step" in r and "success_rate" in r), key=lambda r: r["step"])
    key = (cfg.env.name, cfg.env.train_split, int(cfg.env.get("n_train_tasks") or 0))
    if key not in task_cache:
        task_cache[key] = task_lib.load_tasks(cfg.env, cfg.env.train_split, cfg.env.get("n_train_tasks") or None)
    tasks = task_cache[key]
    index = {t.id: i for i, t in enumerate(tasks)}
    stream = task_lib.TaskStream(tasks, seed=int(cfg.seed))
    T = int(cfg.tasks_per_step)
    drawn = {}
    for r in rows:
        drawn[int(r["step"])] = [index[t.id] for t in stream.take(T)]
    if sorted(drawn) != list(range(len(rows))):
        raise ValueError(f"{arm_dir}: metrics.jsonl's RL steps are not 0..{len(rows) - 1} once each "
                         "(the replay needs every step's draw in order)")
    checked = 0
    samples = arm_dir / "play_samples.jsonl"
    for line in (samples.read_text().splitlines() if samples.exists() else []):
        rec = json.loads(line)
        step = int(rec["step"])
        for s in rec.get("samples", []) + rec.get("outcomes", []):
            if step not in drawn or s.get("task_id") is None:
                continue
            got = tasks[drawn[step][int(s["group"])]].id
            if got != s["task_id"]:
                raise ValueError(f"{arm_dir}: step {step} task {s['group']} logged {s['task_id']!r}, "
                                 f"the replayed stream gives {got!r}")
            checked += 1
    return {"run": str(arm_dir.relative_to(RESULTS) if arm_dir.is_relative_to(RESULTS) else arm_dir),
            "model": str(cfg.model.path), "seed": int(cfg.seed), "objective": str(cfg.get("objective", "paper")),
            "ablation": str(cfg.get("ablation", "none")), "lr": float(cfg.train.lr),
            "tasks": np.array([drawn[s] for s in sorted(drawn)]), "n_tasks": len(tasks),
            "y": np.array([r["success_rate"] for r in rows]), "checked": checked}


def skill1_runs(min_steps: int) -> list[pathlib.Path]:
    """Every campaign arm under RESULTS with mode skill1 and >= ``min_steps`` RL steps."""
    out = []
    for cfg in sorted(RESULTS.glob("campaign_*/*/config.json")):
        d = cfg.parent
        if json.loads(cfg.read_text()).get("mode") != "skill1" or not (d / "metrics.jsonl").exists():
            continue
        n = sum(1 for x in (d / "metrics.jsonl").read_text().splitlines() if '"success_rate"' in x)
        if n >= min_steps:
            out.append(d)
    return out


def trends(runs: list[dict], ridge: float) -> list[dict]:
    """Each run's raw and task-adjusted :func:`linear_trend` (module docstring); the adjusted
    one is None when no other run has the same model."""
    out = []
    for r in runs:
        others = [o for o in runs if o is not r and o["model"] == r["model"] and o["n_tasks"] == r["n_tasks"]]
        adj = None
        if others:
            delta = task_effects(others, r["n_tasks"], ridge)
            adj = linear_trend(r["y"], delta[r["tasks"]].mean(axis=1))
        out.append({k: r[k] for k in ("run", "model", "seed", "objective", "ablation", "lr", "checked")}
                   | {"steps": len(r["y"]), "raw": linear_trend(r["y"]), "adjusted": adj, "others": len(others)})
    return out


def _ci(t: dict | None) -> str:
    return "–" if t is None else f"{t['change']:+.3f} [{t['lo']:+.3f}, {t['hi']:+.3f}] (sd {t['resid_sd']:.3f})"


def table(rows: list[dict], ridge: float) -> str:
    """The markdown report: one row per run, then the pooled rows per model."""
    out = [f"Training success over each Skill1 run: change = OLS slope x (steps - 1), 95 % t interval; "
           f"adjusted = after the step's tasks' difficulty (leave-one-run-out, same model, ridge {ridge}); "
           "sd = residual sd of a step's success.", "",
           "| run | model | seed | objective | ablation | lr | steps | ids checked | raw change | adjusted change |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['run']} | {r['model']} | {r['seed']} | {r['objective']} | {r['ablation']} | {r['lr']:g} | "
                   f"{r['steps']} | {r['checked']} | {_ci(r['raw'])} | {_ci(r['adjusted'])} |")
    out += ["", "| model | runs | raw change, mean over runs | adjusted change, mean over runs |", "|---|---|---|---|"]
    for model, p in pooled_by_model(rows).items():
        out.append(f"| {model} | {p['raw']['runs']} | {_pool(p['raw'])} | {_pool(p['adjusted'])} |")
    return "\n".join(out) + "\n"


def _pool(p: dict | None) -> str:
    return "–" if p is None else f"{p['mean']:+.4f} [{p['lo']:+.4f}, {p['hi']:+.4f}] (sd {p['sd']:.3f})"


def pooled_by_model(rows: list[dict]) -> dict:
    """{model: {"raw": :func:`pooled` of the raw changes, "adjusted": of the adjusted ones or None}}."""
    out = {}
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        adj = [r["adjusted"]["change"] for r in mine if r["adjusted"] is not None]
        out[model] = {"raw": pooled([r["raw"]["change"] for r in mine]), "adjusted": pooled(adj) if adj else None}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", type=pathlib.Path)
    ap.add_argument("--min-steps", type=int, default=8, help="fewer RL steps: the run is skipped (and always < 3)")
    ap.add_argument("--ridge", type=float, default=0.1)
    ap.add_argument("--out", type=pathlib.Path)
    ap.add_argument("--jsonl", type=pathlib.Path)
    a = ap.parse_args(argv)
    dirs = [d.resolve() for d in a.runs] or skill1_runs(a.min_steps)
    cache: dict = {}
    runs = []
    for d in dirs:
        try:
            r = run_steps(d, cache)
        except ValueError as e:
            print(f"skipped: {e}", file=sys.stderr)
            continue
        if len(r["y"]) < max(3, a.min_steps):
            print(f"skipped: {d}: {len(r['y'])} RL steps, under --min-steps {max(3, a.min_steps)}", file=sys.stderr)
            continue
        runs.append(r)
    if not runs:
        raise SystemExit("no Skill1 run with RL steps to read")
    rows = trends(runs, a.ridge)
    text = table(rows, a.ridge)
    print(text, end="")
    if a.out:
        a.out.write_text(text)
    if a.jsonl:
        command = "python benchmarks/learning/train_trend.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(a.jsonl, "w") as f:
            for r in rows:
                f.write(json.dumps(r | {"command": command.strip()}) + "\n")
            for model, p in pooled_by_model(rows).items():
                f.write(json.dumps({"model": model, "pooled": p, "command": command.strip()}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
