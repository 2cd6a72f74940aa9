"""Did Skill1's evaluation pick a skill of the game's own task type, and did such a skill help?

    python benchmarks/learning/skill_match.py benchmarks/results/learning/campaign_2026-12-03b/skill1_full

For each split, the ``with_library`` episodes are split by the type of the skill the policy
chose (``extras.chosen_skill``, an id of ``library_records.jsonl``; its type is the ALFWorld
task type of the skill's first source task) against the game's type: "match", "mismatch", or
"none" (no chosen skill recorded or not in the exported library). Per group: games, success
with the library, success of the same games without it (paired: ``without_library`` records).
A library whose skills are of the right type but do not lift success points at the reader
(issue 18, campaign 9), not at retrieval.
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


def skill_types(library_jsonl: pathlib.Path) -> dict[int, str]:
    """Skill id -> task type of its first source task (``library_records.jsonl`` skills rows);
    a record with no source task (an imported skill, e.g. the ``skill1_hw`` arm's hand-written
    ones) is typed by its scenario when that is one of ``lessons.TYPE_PHRASES``, else left out."""
    from skillax.methods.skill1.lessons import TYPE_PHRASES

    by_phrase = {phrase: t for t, phrase in TYPE_PHRASES.items()}
    out = {}
    for line in library_jsonl.read_text().splitlines():
        r = json.loads(line)
        if r.get("table") != "skills":
            continue
        sources = json.loads(r["source_tasks"]) if r.get("source_tasks") else []
        if sources:
            out[int(r["id"])] = task_type(sources[0])
        elif (r.get("scenario") or "").strip() in by_phrase:
            out[int(r["id"])] = by_phrase[r["scenario"].strip()]
    return out


def match_table(arm: pathlib.Path, split: str) -> dict[str, dict]:
    """{"match" | "mismatch" | "none": {"n", "success_with", "success_without"}} for one split."""
    from skillax.evaluation import read_records

    lib = skill_types(arm / "library_records.jsonl")
    without = {r.task_id: r for r in read_records(arm / "eval" / f"without_library__{split}.jsonl")}
    groups = collections.defaultdict(list)
    for r in read_records(arm / "eval" / f"with_library__{split}.jsonl"):
        cs = r.extras.get("chosen_skill")
        key = "none" if cs not in lib else ("match" if lib[cs] == r.task_type else "mismatch")
        groups[key].append((r.won, without[r.task_id].won))
    return {k: {"n": len(v), "success_with": sum(a for a, _ in v) / len(v),
                "success_without": sum(b for _, b in v) / len(v)} for k, v in sorted(groups.items())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("arms", type=pathlib.Path, nargs="+")
    a = ap.parse_args(argv)
    print("| arm | split | chosen skill's type | games | success with library | same games without |")
    print("|---|---|---|---|---|---|")
    for arm in a.arms:
        for split in ("valid_unseen", "valid_seen"):
            for k, v in match_table(arm, split).items():
                print(f"| {arm.name} | {split} | {k} | {v['n']} | {v['success_with']:.3f} | "
                      f"{v['success_without']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
