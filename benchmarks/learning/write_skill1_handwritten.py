"""The hand-written ALFWorld skills in Skill1's library format (the Skill1 upper-bound arm).

    python benchmarks/learning/write_skill1_handwritten.py [OUT_DIR]

``benchmarks/learning/handwritten_skills`` holds one correct, instance-free procedure per task
type, with an Agent Skills description ("How to heat an object and put it in a receptacle...").
Skill1 retrieves by the cosine between the policy's query and a record's description head, and
the SFT teaches queries of the form ``lessons.query_text`` ("heating: ... . egg, countertop").
Against those queries the plain descriptions reach the 0.4 threshold for their own type on only
40 % of `valid_unseen` games (MiniLM, measured 2026-12-03), so an arm seeded with them would
measure retrieval, not reading. Here each skill keeps its steps as the Strategy and gets
Skill1's task-type head, ``"Use for <type phrase>."`` (``lessons.type_phrase``), the form the
library's own distilled records have. Written through ``SkillLibrary.export_skill_md``, so
``init_skills`` reads them back as Skill1 records (Scenario / Strategy sections).
OUT_DIR defaults to ``benchmarks/learning/handwritten_skills_skill1``.
"""
from __future__ import annotations

import pathlib
import sys
import tempfile

from skillax.methods.skill1.lessons import type_phrase
from skillax.skills import importing
from skillax.skills.library import SkillLibrary

REPO = pathlib.Path(__file__).resolve().parents[2]
SOURCE = REPO / "benchmarks/learning/handwritten_skills"
TASK_TYPE = {"alfworld-pick-and-place": "pick_and_place_simple",
             "alfworld-look-at-in-light": "look_at_obj_in_light",
             "alfworld-clean-and-place": "pick_clean_then_place_in_recep",
             "alfworld-heat-and-place": "pick_heat_then_place_in_recep",
             "alfworld-cool-and-place": "pick_cool_then_place_in_recep",
             "alfworld-pick-two-and-place": "pick_two_obj_and_place"}


def skill1_records(source: pathlib.Path = SOURCE) -> list[tuple[str, str, str]]:
    """(scenario, description_head, strategy) per hand-written skill, in TASK_TYPE order.
    Raises KeyError naming a skill folder with no known task type."""
    docs = {d.name: d for d in importing.read_skills_dir(source).docs()}
    out = []
    for name, task_type in TASK_TYPE.items():
        doc = docs[name]
        phrase = type_phrase(task_type)
        steps = [" ".join(line.split()) for line in doc.body.strip().splitlines() if line.strip()]
        out.append((phrase, f"Use for {phrase}.", "\n".join(steps)))
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = pathlib.Path(argv[0]) if argv else REPO / "benchmarks/learning/handwritten_skills_skill1"
    with tempfile.TemporaryDirectory() as tmp:
        lib = SkillLibrary(pathlib.Path(tmp) / "library.sqlite")
        for scenario, head, strategy in skill1_records():
            lib.add(scenario, head, strategy, step=0, attempt_type="imported")
        names = lib.export_skill_md(out, provenance={"source": "benchmarks/learning/handwritten_skills",
                                                     "written_by": "benchmarks/learning/write_skill1_handwritten.py"})
    print(f"wrote {len(names)} skills to {out}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
