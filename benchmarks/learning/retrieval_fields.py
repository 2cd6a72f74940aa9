"""Which SKILL.md fields should SkillOS's BM25 index? Own-type retrieval of a skill repo over the
held-out ALFWorld goals, per indexed field set (CPU, no model, seconds).

    python benchmarks/learning/retrieval_fields.py [REPO_DIR] [--out FILE.jsonl]

REPO_DIR (default the rule teacher's six task-type skills, ``benchmarks/learning/teacher_skills``)
is indexed with :class:`skillax.skills.retrieval.BM25Index` over each field set, queried with
every ``valid_unseen`` and ``valid_seen`` goal (the executor's query: SkillOS retrieves with the
task text, DESIGN.md §1.2), and scored by whether the game's own task-type skill is ranked first
and within the top 3 (``rollout.top_k``). Campaign 6 found BM25 over name + description + body
(the SkillOS configs' ``rollout.retrieval_fields``) ranks Look's skill above Pick's for most Pick
goals: its body names the receptacles those goals name. One JSON line per (fields, split).
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from skillax.agents.envs.alfworld import load_alfworld_tasks  # noqa: E402
from skillax.evaluation.records import ALFWORLD_TYPE_SHORT  # noqa: E402
from skillax.methods.skillos.sft_data import skill_name  # noqa: E402
from skillax.skills.repo import SkillRepo  # noqa: E402
from skillax.skills.retrieval import BM25Index  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
FIELD_SETS = (("name", "description", "body"), ("name", "description"), ("description",), ("body",))


def own_type_retrieval(repo: SkillRepo, fields: tuple[str, ...], tasks, k: int = 3) -> dict:
    """{"n", "top1", "topk", "per_type": {short type: [top1, topk, n]}} of ``tasks``' goals."""
    idx = BM25Index.from_repo(repo, fields=fields)
    per: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for t in tasks:
        hits = [h for h, _ in idx.search(t.goal, k=k)]
        own = skill_name(t.family)
        c = per[ALFWORLD_TYPE_SHORT.get(t.family, t.family)]
        c[0] += hits[:1] == [own]
        c[1] += own in hits
        c[2] += 1
    return {"n": sum(c[2] for c in per.values()), "top1": sum(c[0] for c in per.values()),
            "topk": sum(c[1] for c in per.values()), "per_type": dict(sorted(per.items()))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", nargs="?", default=str(REPO / "benchmarks/learning/teacher_skills"))
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--out", type=pathlib.Path, default=None)
    a = ap.parse_args(argv)
    repo = SkillRepo(a.repo)
    cmd = "python benchmarks/learning/retrieval_fields.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = []
    for split in ("valid_unseen", "valid_seen"):
        tasks = load_alfworld_tasks(splits=[split])
        for fields in FIELD_SETS:
            line = {"repo": str(pathlib.Path(a.repo).resolve().relative_to(REPO)) if pathlib.Path(a.repo).resolve()
                    .is_relative_to(REPO) else a.repo, "fields": ",".join(fields), "split": split, "k": a.k,
                    **own_type_retrieval(repo, fields, tasks, a.k), "command": cmd.strip()}
            print(json.dumps(line))
            lines.append(line)
    if a.out:
        with a.out.open("a") as f:
            f.writelines(json.dumps(x) + "\n" for x in lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
