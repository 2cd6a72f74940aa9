"""Summarise a learning campaign (benchmarks/results/learning/PROTOCOL.md) from its run folders.

    python benchmarks/learning/summarize.py RUNS_DIR [--out benchmarks/results/learning] [--date D]

RUNS_DIR holds one folder per arm (``skill1_sft``, ``skill1_grpo``, ``skill1_full``,
``skillos_sft``, ``skillos_rl``, ``alpha_sft``, ``alpha_rl``; as written by
``benchmarks/device/learning.sh``), each with ``eval/<condition>__<split>.jsonl`` records and
``metrics.jsonl``. Writes ``<out>/summary.jsonl`` (one line per arm x condition x split, then
one per paired comparison of the protocol, with this command), ``<out>/<method>/curves.png`` (learning curves)
and prints the markdown tables the READMEs quote. Commands are rebuilt from the ARMS table
of ``benchmarks/device/learning.sh``, or taken from the per-arm scripts the campaign wrote
(``<arm>/command.sh``) where they were kept.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from skillax.evaluation import paired_delta, read_records, summarize  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
METHOD = {"skill1": "skill1", "skillos": "skillos", "alpha": "skill_alpha"}
SPLITS = ("valid_unseen", "valid_seen")


def _method_comparisons(sft: str, rl: str, label: str) -> list[tuple]:
    """SkillOS and Skill-alpha comparisons of one arm set (learning.sh ARMSET: smol = sft/rl,
    reader = rsft/rrl, qwen = qsft/qrl); ``label`` prefixes the names of the non-default sets."""
    p = f"{label}: " if label else ""
    so, al = (f"skillos_{sft}", f"skillos_{rl}"), (f"alpha_{sft}", f"alpha_{rl}")
    return [
        ("skillos", so[0], "no_memory", so[1], "curated", p + "RL curator - No Memory"),
        ("skillos", so[0], "no_memory", so[0], "curated", p + "untrained curator - No Memory"),
        ("skillos", so[0], "curated", so[1], "curated", p + "RL - untrained curator"),
        ("skillos", so[0], "no_memory", so[0], "handwritten", p + "hand-written skills - No Memory (upper bound)"),
        ("skill_alpha", al[0], "no_skill", al[1], "with_skill", p + "RL editor z_T - no skill"),
        ("skill_alpha", al[0], "no_skill", al[0], "with_skill", p + "SFT editor z_T - no skill"),
        ("skill_alpha", al[0], "with_skill", al[1], "with_skill", p + "RL - SFT editor z_T"),
        ("skill_alpha", al[0], "no_skill", al[0], "handwritten", p + "hand-written skill - no skill (upper bound)"),
    ]


# (method, baseline arm, baseline condition, arm, condition, name) -- PROTOCOL.md "Comparisons"
COMPARISONS = [
    ("skill1", "skill1_grpo", "without_library", "skill1_full", "with_library", "headline: full with library - GRPO w/o library"),
    ("skill1", "skill1_full", "without_library", "skill1_full", "with_library", "full: with - without its library"),
    ("skill1", "skill1_sft", "without_library", "skill1_grpo", "without_library", "GRPO w/o library - SFT only"),
    ("skill1", "skill1_sft", "without_library", "skill1_full", "without_library", "full without library - SFT only"),
    ("skill1", "skill1_sft", "without_library", "skill1_full", "with_library", "full with library - SFT only"),
    # campaign 14: the full arm's play policy against GRPO's, both without a library
    ("skill1", "skill1_grpo", "without_library", "skill1_full", "without_library",
     "full without library - GRPO w/o library"),
    # learning.sh SKILL1_BOUND=1: the warm start with the hand-written skills as its library
    ("skill1", "skill1_hw", "without_library", "skill1_hw", "with_library",
     "hand-written skills - no library, SFT policy (upper bound)"),
    # campaign 10: the bound arm evaluated with_library only, against the SFT arm's eval of the
    # same warm-start weights on the same games (eval.ablate_retrieval=False: half the eval time)
    ("skill1", "skill1_sft", "without_library", "skill1_hw", "with_library",
     "hand-written skills - SFT only, no library (upper bound; SFT arm as baseline)"),
    # learning.sh SKILL1_L1Z=1 (campaign 14): the full arm with rl.lambda_rerank=0 (paper's "lambda1 = 0")
    ("skill1", "skill1_grpo", "without_library", "skill1_l1z", "with_library",
     "lambda1=0: full with library - GRPO w/o library"),
    ("skill1", "skill1_l1z", "without_library", "skill1_l1z", "with_library",
     "lambda1=0: full with - without its library"),
    ("skill1", "skill1_grpo", "without_library", "skill1_l1z", "without_library",
     "lambda1=0: full without library - GRPO w/o library"),
    ("skill1", "skill1_full", "with_library", "skill1_l1z", "with_library",
     "lambda1=0 - lambda1=0.3, both full with library"),
    # learning.sh SKILL1_UTIL=1 (campaign 16): the full arm with lambda1 = lambda2 = 0 (the play
    # objective alone, skills retrieved into its prompts); PROTOCOL.md 2026-12-04, campaign 16
    ("skill1", "skill1_grpo", "without_library", "skill1_util", "without_library",
     "util only: full without library - GRPO w/o library"),
    ("skill1", "skill1_grpo", "without_library", "skill1_util", "with_library",
     "util only: full with library - GRPO w/o library"),
    ("skill1", "skill1_util", "without_library", "skill1_util", "with_library",
     "util only: full with - without its library"),
    ("skill1", "skill1_full", "without_library", "skill1_util", "without_library",
     "util only - full, both without library"),
    # learning.sh SKILL1_NOTHINK=1: an SFT warm start answering <action> without the think block
    ("skill1", "skill1_sft", "without_library", "skill1_sftnt", "without_library",
     "no-think SFT - SFT (the answer format alone)"),
    ("skill1", "skill1_grpo", "without_library", "skill1_sftnt", "without_library",
     "no-think SFT - GRPO w/o library"),
    # learning.sh SKILL1_RC=1 (campaign 17): GRPO under the released code's objective (format penalty)
    ("skill1", "skill1_grpo", "without_library", "skill1_grpo_rc", "without_library",
     "released-code objective - paper objective, both GRPO w/o library"),
    ("skill1", "skill1_sft", "without_library", "skill1_grpo_rc", "without_library",
     "GRPO w/o library, released-code objective - SFT only"),
    # learning.sh SKILL1_RC_LR (campaign 19): SKILL1_RC's arm at another RL learning rate
    ("skill1", "skill1_sft", "without_library", "skill1_grpo_rc_lr", "without_library",
     "GRPO w/o library, released-code objective at SKILL1_RC_LR's learning rate - SFT only"),
    ("skill1", "skill1_grpo_rc", "without_library", "skill1_grpo_rc_lr", "without_library",
     "released-code objective: SKILL1_RC_LR's learning rate - the campaign's, both GRPO w/o library"),
    # learning.sh SKILL1_RC_BATCH: SKILL1_RC's arm with more episodes a step (e.g. the paper's 16 x 8)
    ("skill1", "skill1_sft", "without_library", "skill1_grpo_rc_b", "without_library",
     "GRPO w/o library, released-code objective with SKILL1_RC_BATCH's episodes a step - SFT only"),
    ("skill1", "skill1_grpo_rc", "without_library", "skill1_grpo_rc_b", "without_library",
     "released-code objective: SKILL1_RC_BATCH's episodes a step - the config's, both GRPO w/o library"),
    # learning.sh SKILL1_FULL_RC=1 (session 27): the full arm under the released code's objective,
    # paired with SKILL1_RC's GRPO arm (issue 18's headline under that objective)
    ("skill1", "skill1_grpo_rc", "without_library", "skill1_full_rc", "with_library",
     "released-code objective, headline: full with library - GRPO w/o library"),
    ("skill1", "skill1_full_rc", "without_library", "skill1_full_rc", "with_library",
     "released-code objective, full: with - without its library"),
    ("skill1", "skill1_sft", "without_library", "skill1_full_rc", "with_library",
     "released-code objective, full with library - SFT only"),
    ("skill1", "skill1_grpo_rc", "without_library", "skill1_full_rc", "without_library",
     "released-code objective, full without library - GRPO w/o library"),
    # learning.sh SKILL1_TRAJ=1: the paper objective with each episode counted once (rl.util_weighting)
    ("skill1", "skill1_sft", "without_library", "skill1_grpo_traj", "without_library",
     "GRPO w/o library, trajectory-weighted paper objective - SFT only"),
    ("skill1", "skill1_grpo", "without_library", "skill1_grpo_traj", "without_library",
     "trajectory-weighted - token-weighted paper objective, both GRPO w/o library"),
    ("skill1", "skill1_grpo_traj", "without_library", "skill1_grpo_rc", "without_library",
     "released-code objective - trajectory-weighted paper objective, both GRPO w/o library"),
] + [c for k in range(1, 10) for c in (   # learning.sh SKILL1_SEEDS: grpo<k>/full<k> run with --config.seed=k
    ("skill1", f"skill1_grpo{k}", "without_library", f"skill1_full{k}", "with_library",
     f"seed {k}, headline: full with library - GRPO w/o library"),
    ("skill1", f"skill1_full{k}", "without_library", f"skill1_full{k}", "with_library",
     f"seed {k}, full: with - without its library"),
    ("skill1", "skill1_sft", "without_library", f"skill1_grpo{k}", "without_library",
     f"seed {k}, GRPO w/o library - SFT only"),
    ("skill1", "skill1_sft", "without_library", f"skill1_full{k}", "without_library",
     f"seed {k}, full without library - SFT only"),
    ("skill1", "skill1_sft", "without_library", f"skill1_full{k}", "with_library",
     f"seed {k}, full with library - SFT only"),
)] + [("skill1", f"skill1_sft_s{k}", "without_library", f"skill1_grpo_rc_s{k}", "without_library",
       f"seed {k}, GRPO w/o library, released-code objective - SFT only")   # learning.sh SKILL1_RC_SEEDS
      for k in range(10)
] + [c for sft, rl, label in (("sft", "rl", ""), ("rsft", "rrl", "served reader"), ("qsft", "qrl", "Qwen2.5-0.5B"))
       for c in _method_comparisons(sft, rl, label)]
# ARMSET=qwen's gap reader (skillos_qgap: play SFT on GAP_TRAINED types only): does a skill in
# context teach a procedure the reader was never shown? Compared on all games, on the held-out
# types (the question) and on the trained types (the control). The 7th element filters records
# by short type.
GAP_TRAINED = ("Pick", "Look", "Pick2")
GAP_HELD_OUT = ("Clean", "Heat", "Cool")
COMPARISONS += [
    ("skillos", "skillos_qgap", "no_memory", "skillos_qgap", "handwritten",
     "gap reader: hand-written skills - No Memory, all types"),
    ("skillos", "skillos_qgap", "no_memory", "skillos_qgap", "handwritten",
     "gap reader: hand-written skills - No Memory, held-out types (Clean/Heat/Cool)", GAP_HELD_OUT),
    ("skillos", "skillos_qgap", "no_memory", "skillos_qgap", "handwritten",
     "gap reader: hand-written skills - No Memory, trained types (Pick/Look/Pick2)", GAP_TRAINED),
    ("skillos", "skillos_qsft", "no_memory", "skillos_qsft", "handwritten",
     "Qwen2.5-0.5B: hand-written skills - No Memory, Clean/Heat/Cool (control for the gap reader)", GAP_HELD_OUT),
]
# ARMSET=search (campaign 5): a reader SFT'd on the searching expert (sft.play_search), whose
# demonstrations follow the places a skill names; "handwritten" there is the rule teacher's
# skills from every valid_train game (benchmarks/learning/teacher_skills), the upper bound.
COMPARISONS += [
    ("skillos", "skillos_ssft", "no_memory", "skillos_ssft", "handwritten",
     "search reader: teacher skills - No Memory (upper bound)"),
    ("skillos", "skillos_ssft", "no_memory", "skillos_ssft", "handwritten",
     "search reader: teacher skills - No Memory, Clean/Heat/Cool", GAP_HELD_OUT),
    ("skillos", "skillos_ssft", "no_memory", "skillos_ssft", "curated", "search reader: untrained curator - No Memory"),
    ("skillos", "skillos_ssft", "no_memory", "skillos_srl", "curated", "search reader: RL curator - No Memory"),
    ("skillos", "skillos_ssft", "curated", "skillos_srl", "curated", "search reader: RL - untrained curator"),
    ("skill_alpha", "alpha_ssft", "no_skill", "alpha_ssft", "handwritten",
     "search worker: teacher rules - no skill (upper bound)"),
    ("skill_alpha", "alpha_ssft", "no_skill", "alpha_ssft", "with_skill", "search worker: SFT editor z_T - no skill"),
] + [c for k in range(1, 10) for c in (
    ("skillos", f"skillos_ss{k}", "no_memory", f"skillos_ss{k}", "handwritten",
     f"search reader, seed {k}: teacher skills - No Memory (upper bound)"),
    ("skillos", f"skillos_ss{k}", "no_memory", f"skillos_ss{k}", "curated",
     f"search reader, seed {k}: untrained curator - No Memory"))]
# campaign 7: the same readers SFT'd with sft.play_contrast (every play game with its own type's
# skill among others', with others' only, and with none): learning.sh SEED_ARM=sc names them;
# SEED_ARM=sd: the contrast readers with the skills retrieved over name + description
# (--config.rollout.retrieval_fields=name,description; benchmarks/learning/retrieval_fields.py).
SEED_ARMS = {"sc": "contrast reader", "sd": "contrast reader, name+description retrieval"}
COMPARISONS += [c for prefix, label in SEED_ARMS.items() for k in range(0, 10) for c in (
    ("skillos", f"skillos_{prefix}{k}", "no_memory", f"skillos_{prefix}{k}", "handwritten",
     f"{label}, seed {k}: teacher skills - No Memory (upper bound)"),
    ("skillos", f"skillos_{prefix}{k}", "no_memory", f"skillos_{prefix}{k}", "curated",
     f"{label}, seed {k}: untrained curator - No Memory"))]
CURVES = {
    "skill1": ["success_rate", "retrieval_rate", "library_size", "library_mean_utility", "rerank_ndcg",
               "distil_parse_ok", "invalid_action_rate", "util/kl", "util/loss", "time/step_s"],
    "skillos": ["r", "r_task", "r_fc", "r_comp", "success_rate", "success_after_first", "repo_skills", "time/step_s"],
    "skill_alpha": ["reward/mean", "valid_rate", "r_ctrl", "r_edit", "edit_beats_ctrl", "zero_variance_units",
                    "time/step_s"],
}


def arm_commands() -> dict[str, str]:
    text = (REPO / "benchmarks/device/learning.sh").read_text()
    out = {}
    for name, cfg, ov in re.findall(r'^\s*"(\w+)\|([^|]+)\|([^"]*)"', text, re.M):
        extra = "" if name.endswith("sft") else " --config.train_until_file=$L/deadline --config.max_train_minutes=20"
        out[name] = f"python3 -m skillax.main --config {cfg} --workdir $L/runs/{name} {ov}{extra}".replace("  ", " ")
    return out


def recorded_commands(runs: pathlib.Path, L: str = "/tmp/L") -> dict[str, str]:
    """{arm: the command that ran}, from the per-arm scripts ``learning.sh`` wrote
    (``<runs>/<arm>/command.sh`` or ``<runs>/../logs/<arm>.sh``): its ``export`` and
    ``python3`` lines, the run directory written as ``$L``. Arms without one are absent."""
    out = {}
    for arm_dir in sorted(p for p in runs.iterdir() if p.is_dir()):
        for f in (arm_dir / "command.sh", runs.parent / "logs" / f"{arm_dir.name}.sh"):
            if f.exists():
                keep = [ln.split(" > ")[0] for ln in f.read_text().splitlines()
                        if ln.startswith(("export XLA", "python3 "))]
                out[arm_dir.name] = "; ".join(keep).replace(L, "$L")
                break
    return out


def read_metrics(run: pathlib.Path) -> list[dict]:
    p = run / "metrics.jsonl"
    if not p.exists():
        return []
    rows = []
    for line in p.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return rows


def train_minutes(rows: list[dict]) -> float:
    return round(sum(float(r.get("time/step_s", 0.0)) for r in rows) / 60.0, 2)


def arm_label(arm: str) -> str:
    """The ``arm`` field of a summary line: the folder name less its method prefix and less the
    ``_s<k>`` of learning.sh SKILL1_RC_SEEDS (the seed is its own field): "skill1_grpo_rc_s0" ->
    "grpo_rc", "skill1_grpo2" -> "grpo2" (SKILL1_SEEDS keeps its suffix, as recorded before)."""
    return re.sub(r"_s\d$", "", arm.split("_", 1)[1])


def arm_seed(run: pathlib.Path, default: int) -> int:
    """The arm's ``config.seed`` from its ``config.json`` (the per-seed arms ``skillos_ss<k>``
    run with ``--config.seed=k``); ``default`` (``--seed``) where the file is absent."""
    p = run / "config.json"
    if p.exists():
        seed = json.loads(p.read_text()).get("seed")
        if seed is not None:
            return int(seed)
    return default


def eval_keying(run: pathlib.Path, default_seed: int) -> tuple | None:
    """(seed, eval.temperature) from the arm's ``config.json`` (the seed as :func:`arm_seed`
    reads it), or None where the file is absent. Two arms of one campaign evaluate on common
    random numbers where these agree: the evaluation keys game e's turn t on the seed, a
    private counter and e (ARCHITECTURE.md, "Sampling keys"). Two limits: campaigns evaluated
    before 2026-12-06 (campaign 17's fix, PROTOCOL.md) drew from the training counter and were
    never on common random numbers, whatever this says; and Skill1's keys depended on
    ``eval.batch_size`` until 2026-12-07 (``skillax/methods/skill1/evaluate.py``; every
    recorded campaign evaluated its split in one chunk, 140 >= 134 games). A different
    ``eval.batch_size`` is still another program shape on a GPU (numerics may differ slightly)."""
    p = run / "config.json"
    if not p.exists():
        return None
    return (arm_seed(run, default_seed), (json.loads(p.read_text()).get("eval") or {}).get("temperature"))


def load_eval(runs: pathlib.Path) -> dict:
    """{(arm, condition, split): [EpisodeRecord]}."""
    out = {}
    for arm_dir in sorted(p for p in runs.iterdir() if p.is_dir()):
        for f in sorted((arm_dir / "eval").glob("*__*.jsonl")):
            cond, split = f.stem.split("__", 1)
            out[(arm_dir.name, cond, split)] = read_records(f)
    return out


def plot_curves(method: str, runs: pathlib.Path, out_png: pathlib.Path) -> bool:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [d for d in sorted(runs.iterdir()) if d.is_dir() and METHOD.get(d.name.split("_")[0]) == method
            and read_metrics(d)]
    if not arms:
        return False
    keys = [k for k in CURVES[method] if any(k in r for d in arms for r in read_metrics(d))]
    if not keys:
        return False
    cols = 4
    rows = -(-len(keys) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, k in zip(axes.flat, keys):
        for d in arms:
            m = read_metrics(d)
            xs = [r.get("step", i) for i, r in enumerate(m) if k in r]
            ys = [r[k] for r in m if k in r]
            if ys:
                ax.plot(xs, ys, label=d.name, lw=1.2)
        ax.set_title(k, fontsize=9)
        ax.set_xlabel("RL step", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path, default=REPO / "benchmarks/results/learning")
    ap.add_argument("--date", default=os.environ.get("CAMPAIGN_DATE", ""))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    cmds = {**arm_commands(), **recorded_commands(a.runs)}
    rel = lambda p: os.path.relpath(p.resolve(), REPO) if p.resolve().is_relative_to(REPO) else str(p)  # noqa: E731
    this = f"python benchmarks/learning/summarize.py {rel(a.runs)} --out {rel(a.out)} --date {a.date} --seed {a.seed}"
    ev = load_eval(a.runs)
    seeds = {arm: arm_seed(a.runs / arm, a.seed) for arm in {k[0] for k in ev}}
    keying = {arm: eval_keying(a.runs / arm, a.seed) for arm in seeds}
    lines = []
    print("| method | arm | condition | split | n | success [95% CI] | Pick | Look | Clean | Heat | Cool | Pick2 | "
          "steps | invalid | retrieval | RL steps | RL min |")
    print("|" + "---|" * 17)
    for (arm, cond, split), recs in sorted(ev.items()):
        method = METHOD.get(arm.split("_")[0], arm)
        m = read_metrics(a.runs / arm)
        s = summarize(recs)
        line = {"method": method, "arm": arm_label(arm), "condition": cond,
                "seed": seeds[arm], "split": split,
                "n": s["n"], "success": s["success"], "ci95": s["ci95"], "per_type": s["per_type"],
                "mean_steps": s["mean_steps"], "invalid_action_rate": s["invalid_action_rate"],
                "invalid_reasons": s["invalid_reasons"], "env_invalid_rate": s["env_invalid_rate"],
                "retrieval_rate": s["retrieval_rate"], "failed": s["failed"], "rl_steps": len(m),
                "train_minutes": train_minutes(m), "command": cmds.get(arm, ""), "date": a.date}
        lines.append(line)
        pt = s["per_type"]
        cell = lambda t: f"{pt[t][0]}/{pt[t][1]}" if t in pt else "-"  # noqa: E731
        ret = "-" if s["retrieval_rate"] is None else f"{s['retrieval_rate']:.2f}"
        print(f"| {method} | {line['arm']} | {cond} | {split} | {s['n']} | {s['success']:.3f} "
              f"[{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}] | " + " | ".join(cell(t) for t in
              ("Pick", "Look", "Clean", "Heat", "Cool", "Pick2")) +
              f" | {s['mean_steps']:.1f} | {s['invalid_action_rate']:.3f} | {ret} | {len(m)} | {line['train_minutes']} |")
    print()
    print("| method | comparison | split | n | delta [paired bootstrap 95% CI] | arm-only wins | baseline-only wins | McNemar p |")
    print("|---|---|---|---|---|---|---|---|")
    warnings = []
    for method, ba, bc, aa, ac, name, *types in COMPARISONS:
        for split in SPLITS:
            b, x = ev.get((ba, bc, split)), ev.get((aa, ac, split))
            if types:   # a subset of task types (the same games on both sides: paired)
                b = b and [r for r in b if r.short_type in types[0]]
                x = x and [r for r in x if r.short_type in types[0]]
            if not b or not x:
                continue
            d = paired_delta(b, x, seed=a.seed)
            kb, kx = keying[ba], keying[aa]
            crn = None if kb is None or kx is None else kb == kx
            if crn is False:
                warnings.append(f"{name} ({split}): not on common random numbers, (seed, eval.temperature) "
                                f"{kb} vs {kx}")
            lines.append({"method": method, "comparison": name, "baseline": f"{ba}:{bc}", "arm": f"{aa}:{ac}",
                          "seed": seeds[aa], "split": split, "n": d["n"], "delta": d["delta"],
                          "delta_ci95": d["delta_ci95"], "arm_only": d["arm_only"],
                          "baseline_only": d["baseline_only"], "mcnemar_p": d["mcnemar_p"], "crn": crn, "command": this,
                          "date": a.date})
            print(f"| {method} | {name} | {split} | {d['n']} | {d['delta']:+.3f} [{d['delta_ci95'][0]:+.3f}, "
                  f"{d['delta_ci95'][1]:+.3f}] | {d['arm_only']} | {d['baseline_only']} | {d['mcnemar_p']:.3f} |")
    for w in warnings:
        print(f"\nWARNING: {w}")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "summary.jsonl").write_text("".join(json.dumps(x, sort_keys=True) + "\n" for x in lines))
    for method in CURVES:
        if plot_curves(method, a.runs, a.out / method / "curves.png"):
            print(f"wrote {a.out / method / 'curves.png'}")
    print(f"wrote {a.out / 'summary.jsonl'} ({len(lines)} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
