"""Issue 22 wired into the three methods (no policy model here; the tiny runs that export are in
test_skill1_contract / test_skillos_integration / test_skill_alpha_campaign): ``init_skills`` =
benchmarks/learning/handwritten_skills/ (six ALFWorld skills) seeds the Skill1 library, every
SkillOS rollout's repo and Skill-alpha's z_0; each method's export writes folders that pass our
gate (``skills.spec.check_skill_folder``) and the reference validator (``skills_ref``), with the
run's provenance in ``metadata``."""
import pathlib

import pytest

from skillax.config_defaults import skill1
from skillax.methods.skill_alpha.config import skill_alpha
from skillax.methods.skillos.config import skillos
from skillax.skills.rules import rules_of
from skillax.skills.skill_md import SkillDoc, parse_skill_md
from skillax.skills.spec import check_skill_folder

HANDWRITTEN = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "learning" / "handwritten_skills"
SIX = ["alfworld-clean-and-place", "alfworld-cool-and-place", "alfworld-heat-and-place",
       "alfworld-look-at-in-light", "alfworld-pick-and-place", "alfworld-pick-two-and-place"]
STEPS = {"alfworld-clean-and-place": 4, "alfworld-cool-and-place": 4, "alfworld-heat-and-place": 4,
         "alfworld-look-at-in-light": 3, "alfworld-pick-and-place": 4, "alfworld-pick-two-and-place": 3}


def assert_agent_skills(root: pathlib.Path, names=None) -> list[pathlib.Path]:
    """Every skill folder under ``root`` passes our gate and ``skills_ref``; returns them."""
    from skills_ref.validator import validate

    folders = sorted(p.parent for p in root.glob("*/SKILL.md"))
    assert folders, f"no skills under {root}"
    if names is not None:
        assert [p.name for p in folders] == sorted(names)
    for p in folders:
        rep = check_skill_folder(p)
        assert rep.ok, (p.name, rep.errors)
        assert validate(p) == [], (p.name, validate(p))
    return folders


def test_init_skills_is_a_documented_base_key():
    for c in (skill1(), skillos(), skill_alpha()):
        assert c.init_skills == ""


# ----------------------------------------------------------------------------- Skill1
def test_skill1_seed_and_export(tmp_path):
    from skillax.methods.skill1.loop import export_library, seed_from_config
    from skillax.skills.library import BIRTH_COUNT, BIRTH_UTILITY, SkillLibrary

    cfg = skill1()
    lib = SkillLibrary(":memory:")
    assert seed_from_config(cfg, lib) == 0 and len(lib) == 0            # unset: the paper's empty library
    cfg.init_skills = str(HANDWRITTEN)
    assert seed_from_config(cfg, lib) == 6
    recs = lib.records()
    assert [r.attempt_type for r in recs] == ["imported"] * 6
    assert {(r.utility, r.count, r.created_step) for r in recs} == {(BIRTH_UTILITY, BIRTH_COUNT, 0)}
    assert seed_from_config(cfg, lib) == 0 and len(lib) == 6            # a re-run never seeds twice

    work = tmp_path / "arm-a"
    names = export_library(lib, work, 4)
    # the library keeps no name: an imported skill is exported under a slug of its description,
    # with its own description and its body as the strategy
    assert names[0] == "clean-object-put-receptacle-alfworld-household" and len(set(names)) == 6
    src = {(d.description, d.body.strip()) for d in (parse_skill_md((HANDWRITTEN / n / "SKILL.md").read_text())
                                                     for n in SIX)}
    got = set()
    for p in assert_agent_skills(work / "skills", names):
        doc = parse_skill_md((p / "SKILL.md").read_text())
        assert {k: doc.metadata[k] for k in ("method", "run-id", "step", "source", "attempt-type")} == \
            {"method": "skill1", "run-id": "arm-a", "step": "4", "source": "imported", "attempt-type": "imported"}
        got.add((doc.description, doc.body.split("## Strategy", 1)[1].strip()))
    assert got == src
    # the next checkpoint's export replaces the folder's content: a skill gone is removed
    with lib.conn:
        lib.conn.execute("DELETE FROM skills WHERE id=?", (recs[0].id,))
    export_library(lib, work, -1)                                      # no RL step yet: no step key
    assert_agent_skills(work / "skills", names[1:])
    assert "step" not in parse_skill_md((work / "skills" / names[1] / "SKILL.md").read_text()).metadata


# ----------------------------------------------------------------------------- SkillOS
def test_skillos_repos_start_from_init_skills_and_export(tmp_path):
    from skillax.methods.skillos.rollout import new_repo
    from skillax.methods.skillos.train import export_repo, rollout_config

    cfg = skillos(env_name="textworld")
    assert rollout_config(cfg).init_skills is None
    assert len(new_repo(tmp_path / "empty", rollout_config(cfg).init_skills)) == 0
    cfg.init_skills = str(HANDWRITTEN)
    seed = rollout_config(cfg).init_skills
    repo = new_repo(tmp_path / "r", seed, step=3)
    assert repo.names() == SIX
    for n in SIX:       # spec-valid files are kept byte-for-byte
        assert repo.text(n) == (HANDWRITTEN / n / "SKILL.md").read_text()
    log = repo.read_changelog()
    assert [(e["op"], e["step"], e["args"]["source"]) for e in log] == [("import", 3, n) for n in SIX]
    repo2 = new_repo(tmp_path / "r", seed)                              # a fresh rollout: the same six again
    assert repo2.names() == SIX

    work = tmp_path / "arm-b"
    assert export_repo(repo.state(), work / "skills", run_id=work.name, step=7) == 6
    for p in assert_agent_skills(work / "skills", SIX):
        doc = parse_skill_md((p / "SKILL.md").read_text())
        assert doc.metadata == {"method": "skillos", "run-id": "arm-b", "step": "7"}
        assert doc.body == parse_skill_md((HANDWRITTEN / p.name / "SKILL.md").read_text()).body


# ----------------------------------------------------------------------------- Skill-alpha
def test_skill_alpha_z0_from_init_skills():
    from skillax.methods.skill_alpha.setting import initial_skill

    cfg = skill_alpha("experience")
    assert rules_of(initial_skill(cfg)).rules == ()                     # default z_0: no rules
    cfg.init_skills = str(HANDWRITTEN)
    z0 = initial_skill(cfg)                                            # six skills, no skill.name: merged
    rules = rules_of(z0).rules
    assert z0.name == "household-tasks" and len(rules) == sum(STEPS.values()) == 22
    assert [r.label for r in rules] == [f"R{i}" for i in range(1, 23)]
    assert [r.text.split(":", 1)[0] for r in rules] == [n for n in SIX for _ in range(STEPS[n])]
    assert rules[8].text == 'alfworld-heat-and-place: Find the object X (food such as apple, egg, potato, ' \
        'tomato, bread, mug or cup: countertop, diningtable, fridge, cabinet, sinkbasin) and take it.'
    cfg.skill.name = "alfworld-look-at-in-light"                        # one of them, its own name
    z0 = initial_skill(cfg)
    assert z0.name == "alfworld-look-at-in-light" and len(rules_of(z0).rules) == 3
    assert rules_of(z0).rules[2].text.startswith('Turn the lamp on with "use desklamp 1"')
    cfg.skill.name = "no-such-skill"
    with pytest.raises(ValueError, match="no imported skill named"):
        initial_skill(cfg)


def test_skill_alpha_export_names_each_rules_evidence(tmp_path):
    """z_T = R1 (from z_0), R2 (UPDATEd at chunk 5), R4 (CREATEd at chunk 2, then MERGEd at chunk
    7); R3 was pruned, so the next id stays 5 after the export."""
    from skillax.methods.skill_alpha.inference import write_skill_folder
    from skillax.skills.rules import make_rule_body, with_rules
    from skillax.skills.skill_md import make_skill

    z = with_rules(make_skill("household-tasks", "Rules for household games. Use for ALFWorld tasks."),
                   make_rule_body(["open a closed receptacle first", "heat with the microwave", "x", "take it"]))
    body = rules_of(z)
    z = with_rules(z, body.__class__(tuple(r for r in body.rules if r.label != "R3"), 5, body.preamble))
    def rec(step, chunk, action, after, valid=True):     # `inference.edit_record`'s fields
        return {"step": step, "chunk": chunk, "family": "pick", "action": action, "target": list(after),
                "before": {}, "after": after, "valid": valid, "reason": None if valid else "bad", "output": ""}

    history = [rec(0, 2, "CREATE", {"R4": "take it"}), rec(1, 3, "UPDATE", {"R1": "never"}, valid=False),
               rec(2, 5, "UPDATE", {"R2": "heat with the microwave"}), rec(3, 6, "PRUNE", {}),
               rec(4, 7, "MERGE", {"R4": "take it"})]
    work = tmp_path / "arm-c"
    folder = write_skill_folder(work / "skill", z, history,
                                provenance={"method": "skill_alpha", "run-id": work.name, "step": 9})
    assert folder == work / "skill" / "household-tasks"
    assert_agent_skills(work / "skill", ["household-tasks"])
    out = parse_skill_md((folder / "SKILL.md").read_text())
    assert out.metadata == {"next-rule-id": "5", "method": "skill_alpha", "run-id": "arm-c", "step": "9",
                            "rule-R1": "z0", "rule-R2": "chunk 5 UPDATE (step 2)",
                            "rule-R4": "chunk 7 MERGE (step 4)"}
    assert rules_of(out) == rules_of(z) and rules_of(out).next_id == 5
    assert (folder / "changelog.jsonl").is_file() and (folder / "CHANGELOG.md").is_file()
    bad = SkillDoc("x" * 80, "Kitchen rules for heating food.", "b")   # invalid name: the gate names it
    assert write_skill_folder(tmp_path / "w", bad, []).name == "kitchen-rules-heating-food"
    assert_agent_skills(tmp_path / "w", ["kitchen-rules-heating-food"])
