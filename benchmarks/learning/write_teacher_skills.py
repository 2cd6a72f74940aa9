"""Write the rule teacher's task-type skills from every valid_train planner trajectory.

The SkillOS rule teacher (``skillax.methods.skillos.type_skills``) writes one skill per ALFWorld
task type: the procedure with X = the object and Y = the target, and where the planner found X
in the games it saw ("In earlier games it was in or on the ..."). Written here from all 200
``valid_train`` games, these are the best skills a curator could write from the training split
in that form: campaign 5's upper-bound condition for a reader SFT'd on the searching expert
(``sft.play_search``), whose demonstrations follow exactly these places. Never used in any
SFT data (the SFT skills are written from a few *other* games per episode).

    SKILLAX_CACHE=... python benchmarks/learning/write_teacher_skills.py [OUT_DIR]

OUT_DIR defaults to benchmarks/learning/teacher_skills (one <name>/SKILL.md per task type,
named and rendered as the curator's skills: ``skill_name(family)``, ``executor_skill_text``).
Needs ../shared/data/alfworld and the planner records (cached, else planned here: slow).
"""
from __future__ import annotations

import os
import pathlib
import sys

from skillax.agents.envs.alfworld import load_alfworld_tasks
from skillax.agents.envs.experts import expert_trajectory
from skillax.methods.skillos.sft_data import skill_name
from skillax.methods.skillos.type_skills import teacher_row, type_skill
from skillax.skills.skill_md import make_skill, render_skill_md


def teacher_skills(split: str = "valid_train") -> dict[str, str]:
    """{skill name: SKILL.md text} for every task type of ``split``."""
    by_family: dict[str, list] = {}
    for t in load_alfworld_tasks(splits=[split]):
        rec = expert_trajectory(t)
        if rec.won and not rec.error:
            by_family.setdefault(t.family, []).append(teacher_row(t, rec.actions))
    out = {}
    for fam, games in sorted(by_family.items()):
        desc, body = type_skill(fam, games)
        out[skill_name(fam)] = render_skill_md(make_skill(skill_name(fam), desc, body))
    return out


def main(argv: list[str]) -> None:
    root = pathlib.Path(argv[0] if argv else os.path.join(os.path.dirname(__file__), "teacher_skills"))
    for name, text in teacher_skills().items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "SKILL.md").write_text(text, encoding="utf-8")
        print(name, len(text), "chars")


if __name__ == "__main__":
    main(sys.argv[1:])
