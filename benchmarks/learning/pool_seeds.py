"""Pool one paired comparison over independently trained seeds (issue 18's "second seed").

    python benchmarks/learning/pool_seeds.py [--summary benchmarks/results/learning/summary.jsonl]
        [--pattern REGEX] [--name NAME] [--date D] [--by seed|run] [--model PATH] [--write]

Reads the comparison lines of ``summary.jsonl`` whose ``comparison`` matches ``--pattern``
(default: the search reader's upper bound, "teacher skills - No Memory", of every seed), keeps
one line per (seed, split) -- the latest date where a seed was measured twice --, and reports
per split the mean of the per-seed deltas with a Student-t 95 % interval over seeds
(:func:`skillax.evaluation.stats.seed_spread`). ``--by run`` pools every (campaign date, seed)
instead: independently trained runs of one method across campaigns (e.g. Skill1's "with - without
its library" over campaigns 1-9; the settings differ between campaigns, so the interval is over
runs of the method at this scale, not over seeds of one setting). ``--write`` replaces the pooled
lines of the same ``--name`` in ``summary.jsonl`` (appends them the first time).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import shlex
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from skillax.evaluation.stats import seed_spread  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
DEFAULT = r"^search reader(, seed \d+)?: teacher skills - No Memory \(upper bound\)$"
NAME = "search reader, seeds pooled: teacher skills - No Memory (upper bound)"


DEFAULT_MODEL = "(config default)"
_MODEL = re.compile(r"--config\.model\.path=(\S+)")


def run_models(lines: list[dict]) -> dict[tuple[str, str], set[str]]:
    """{(date, method): the policies its arm lines ran}, read from each arm line's ``command``
    (``--config.model.path=X``; :data:`DEFAULT_MODEL` without one, the config's default --
    SmolLM2-135M for the learning configs). Comparison lines carry summarize.py's command, not
    the arms', so a comparison's policy is its campaign's (date and method)."""
    out: dict[tuple[str, str], set[str]] = {}
    for x in lines:
        cmd = x.get("command", "")
        if "comparison" not in x and "skillax.main" in cmd:
            m = _MODEL.search(cmd)
            out.setdefault((str(x.get("date", "")), x.get("method", "")), set()).add(m.group(1) if m else DEFAULT_MODEL)
    return out


def pooled_lines(lines: list[dict], pattern: str, name: str, date: str, command: str, by: str = "seed",
                 model: str | None = None) -> list[dict]:
    """One pooled line per split with >= 2 units among ``lines`` matching ``pattern``; a unit is
    a seed (``by="seed"``, its latest line) or a (date, seed) run (``by="run"``).

    ``model``: keep only comparisons of campaigns whose arms ran that policy (:func:`run_models`;
    ``"(config default)"`` for arms without ``--config.model.path``). Without it, matching
    comparisons from campaigns of different policies raise ValueError naming them: runs of a
    0.5B and a 135M policy are not one population (campaign 15)."""
    if by not in ("seed", "run"):
        raise ValueError(f"by must be 'seed' or 'run', got {by!r}")
    rx = re.compile(pattern)
    models = run_models(lines)
    seen: dict[str, set[str]] = {}
    latest: dict[tuple, dict] = {}
    for x in lines:
        if "comparison" in x and rx.search(x["comparison"]) and "deltas" not in x:   # not a pooled line
            ran = models.get((str(x.get("date", "")), x.get("method", "")), {DEFAULT_MODEL})
            if model is not None and model not in ran:
                continue
            for mdl in ran:
                seen.setdefault(mdl, set()).add(str(x.get("date", "")))
            unit = int(x["seed"]) if by == "seed" else (str(x.get("date", "")), int(x["seed"]))
            key = (unit, x["split"])
            if key not in latest or str(x.get("date", "")) >= str(latest[key].get("date", "")):
                latest[key] = x
    if model is None and len(seen) > 1:
        raise ValueError("the matching comparisons come from campaigns of different policies: "
                         + "; ".join(f"{m}: {sorted(d)}" for m, d in sorted(seen.items()))
                         + " -- pass --model to pool one of them")
    out = []
    for split in sorted({s for _, s in latest}):
        per = sorted((unit, x) for (unit, s), x in latest.items() if s == split)
        if len(per) < 2:
            continue
        sp = seed_spread([x["delta"] for _, x in per])
        line = {"method": per[0][1]["method"], "comparison": name, "split": split,
                "seeds": [u if by == "seed" else u[1] for u, _ in per], "deltas": [x["delta"] for _, x in per],
                "n_per_seed": [x["n"] for _, x in per], "k": sp["k"], "delta": sp["mean"],
                "delta_ci95": sp["ci95"], "between_seed_sd": sp["sd"],
                "interval": "student-t over seeds" if by == "seed" else "student-t over runs",
                "command": command, "date": date}
        if by == "run":
            line["runs"] = [list(u) for u, _ in per]
        out.append(line)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--summary", type=pathlib.Path, default=REPO / "benchmarks/results/learning/summary.jsonl")
    ap.add_argument("--pattern", default=DEFAULT)
    ap.add_argument("--name", default=NAME)
    ap.add_argument("--date", default="")
    ap.add_argument("--by", choices=("seed", "run"), default="seed")
    ap.add_argument("--model", default=None,
                    help="pool only campaigns whose arms ran this --config.model.path "
                         f"({DEFAULT_MODEL!r} = none given); required when the matches mix policies")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    raw = [x for x in a.summary.read_text().splitlines() if x.strip()]
    lines = [json.loads(x) for x in raw]
    cmd = "python benchmarks/learning/pool_seeds.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    pooled = pooled_lines(lines, a.pattern, a.name, a.date, cmd.strip(), by=a.by, model=a.model)
    for p in pooled:
        units, unit = (f"runs {p['runs']}", "run") if "runs" in p else (f"seeds {p['seeds']}", "seed")
        print(f"{p['split']}: {units} deltas {[round(d, 3) for d in p['deltas']]} -> mean {p['delta']:+.3f} "
              f"[{p['delta_ci95'][0]:+.3f}, {p['delta_ci95'][1]:+.3f}] (between-{unit} sd {p['between_seed_sd']:.3f})")
    if a.write and pooled:
        kept = [r for r, x in zip(raw, lines) if x.get("comparison") != a.name]
        a.summary.write_text("".join(r + "\n" for r in kept) + "".join(json.dumps(p, sort_keys=True) + "\n"
                                                                      for p in pooled))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
