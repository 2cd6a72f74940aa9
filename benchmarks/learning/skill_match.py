"""Did Skill1's evaluation pick a skill of the game's own task type, and did such a skill help?

    python benchmarks/learning/skill_match.py benchmarks/results/learning/campaign_2026-12-03b/skill1_full

For each split, the ``with_library`` episodes are split by the type of the skill the policy
chose (``extras.chosen_skill``, an id of ``library_records.jsonl``; its type is the ALFWorld
task type of the skill's first source task) against the game's type: "match", "mismatch", or
"none" (no chosen skill recorded or not in the exported library). Per group: games, success
with the library, success of the same games without it (paired: ``without_library`` records).
A library whose skills are of the right type but do not lift success points at the reader
(issue 18, campaign 9), not at retrieval. ``--without ARM`` pairs every arm with another arm's
``without_library`` eval (campaign 10: the hand-written bound arm ``skill1_hw`` against the SFT
arm, the same warm-start weights); an arm without ``library_records.jsonl`` is typed from its
exported ``skills/`` folder.
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))


def task_type(task_id: str) -> str:
    """ALFWorld task type from a task id ``<split>/<type>-<obj>-...-<scene>/<trial>``."""
    return task_id.split("/")[1].split("-")[0]


def skill_types(arm: pathlib.Path) -> dict[int, str]:
    """Skill id -> task type, from the arm's ``library_records.jsonl`` (skills rows: the type of
    the first source task; a record with no source task, an imported skill, is typed by its
    scenario when that is one of ``lessons.TYPE_PHRASES``, else left out) or, where the arm has
    no such file (an arm with no RL step, e.g. ``skill1_hw``), from its exported ``skills/``
    folder (``metadata.library-id`` and the Scenario section of each SKILL.md)."""
    from skillax.methods.skill1.lessons import TYPE_PHRASES
    from skillax.skills import importing

    by_phrase = {phrase: t for t, phrase in TYPE_PHRASES.items()}
    out = {}
    records = arm / "library_records.jsonl"
    if not records.exists():
        for doc in importing.read_skills_dir(arm / "skills").docs():
            scenario = importing.record_fields(doc)[0].strip()
            if "library-id" in doc.metadata and scenario in by_phrase:
                out[int(doc.metadata["library-id"])] = by_phrase[scenario]
        return out
    for line in records.read_text().splitlines():
        r = json.loads(line)
        if r.get("table") != "skills":
            continue
        sources = json.loads(r["source_tasks"]) if r.get("source_tasks") else []
        if sources:
            out[int(r["id"])] = task_type(sources[0])
        elif (r.get("scenario") or "").strip() in by_phrase:
            out[int(r["id"])] = by_phrase[r["scenario"].strip()]
    return out


def match_table(arm: pathlib.Path, split: str, without_arm: pathlib.Path | None = None) -> dict[str, dict]:
    """{"match" | "mismatch" | "none": {"n", "success_with", "success_without", "delta",
    "delta_ci95"}} for one split; the ``without_library`` records come from ``without_arm``
    (default ``arm``: the same weights; the bound arm evaluates with its library only and is
    paired with the SFT arm, which evaluates the same warm start without one). ``delta``: paired
    success difference on the group's games with its bootstrap 95 % interval
    (``skillax.evaluation.stats.paired_delta``)."""
    from skillax.evaluation import read_records
    from skillax.methods.common.eval_io import condition_path
    from skillax.evaluation.stats import paired_delta

    lib = skill_types(arm)
    base = without_arm or arm
    without = {r.task_id: r for r in read_records(condition_path(base, "without_library", split))}
    groups = collections.defaultdict(list)
    for r in read_records(condition_path(arm, "with_library", split)):
        cs = r.extras.get("chosen_skill")
        key = "none" if cs not in lib else ("match" if lib[cs] == r.task_type else "mismatch")
        groups[key].append((r, without[r.task_id]))
    out = {}
    for k, v in sorted(groups.items()):
        d = paired_delta([b for _, b in v], [a for a, _ in v])
        out[k] = {"n": len(v), "success_with": sum(a.won for a, _ in v) / len(v),
                  "success_without": sum(b.won for _, b in v) / len(v), "delta": d["delta"],
                  "delta_ci95": d["delta_ci95"]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("arms", type=pathlib.Path, nargs="+")
    ap.add_argument("--without", type=pathlib.Path, default=None,
                    help="the arm whose without_library eval pairs with every arm's with_library "
                         "(default: each arm's own)")
    a = ap.parse_args(argv)
    from skillax.methods.common.eval_io import condition_path
    print("| arm | split | chosen skill's type | games | success with library | same games without "
          "| delta [paired bootstrap 95% CI] |")
    print("|---|---|---|---|---|---|---|")
    for arm in a.arms:
        for split in ("valid_unseen", "valid_seen"):
            if not condition_path(arm, "with_library", split).exists():
                continue            # a campaign that evaluated one split only (eval.splits)
            for k, v in match_table(arm, split, a.without).items():
                lo, hi = v["delta_ci95"]
                print(f"| {arm.name} | {split} | {k} | {v['n']} | {v['success_with']:.3f} | "
                      f"{v['success_without']:.3f} | {v['delta']:+.3f} [{lo:+.3f}, {hi:+.3f}] |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
