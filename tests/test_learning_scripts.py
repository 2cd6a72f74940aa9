"""benchmarks/learning scripts of issue 18 (campaign 9): the chosen-skill type table and the
Skill1-format hand-written skills."""

from __future__ import annotations

import json


def test_skill_match_groups_episodes_by_the_chosen_skills_type(tmp_path):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks/learning/skill_match.py"
    spec = importlib.util.spec_from_file_location("skill_match", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    arm = tmp_path / "skill1_full"
    (arm / "eval").mkdir(parents=True)
    src = lambda t: json.dumps([f"valid_train/{t}-Mug-None-Desk-1/trial_1"])  # noqa: E731
    (arm / "library_records.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [
        {"table": "meta", "key": "schema_version", "value": "2"},
        {"table": "skills", "id": 7, "source_tasks": src("pick_and_place_simple")},
        {"table": "skills", "id": 9, "source_tasks": src("pick_heat_then_place_in_recep")}]))
    games = [("pick_and_place_simple", 7, True, False), ("pick_and_place_simple", 9, False, False),
             ("pick_and_place_simple", 7, False, True), ("pick_heat_then_place_in_recep", None, True, True)]
    with_, without = [], []
    for i, (t, cs, won_with, won_without) in enumerate(games):
        tid = f"valid_unseen/{t}-Apple-None-Desk-{i}/trial_{i}"
        with_.append({"task_id": tid, "task_type": t, "won": won_with, "extras": {"chosen_skill": cs}})
        without.append({"task_id": tid, "task_type": t, "won": won_without, "extras": {}})
    for name, recs in (("with_library", with_), ("without_library", without)):
        (arm / "eval" / f"{name}__valid_unseen.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    got = mod.match_table(arm, "valid_unseen")
    assert got == {"match": {"n": 2, "success_with": 0.5, "success_without": 0.5},
                   "mismatch": {"n": 1, "success_with": 0.0, "success_without": 0.0},
                   "none": {"n": 1, "success_with": 1.0, "success_without": 1.0}}


def test_skill1_handwritten_skills_read_back_as_skill1_records():
    """The committed Skill1-format hand-written skills (learning.sh SKILL1_BOUND's library) read
    back through init_skills' importer with Skill1's task-type head and the hand-written steps."""
    import importlib.util
    import pathlib

    from skillax.methods.skill1.lessons import type_phrase
    from skillax.skills import importing

    root = pathlib.Path(__file__).resolve().parents[1] / "benchmarks/learning"
    spec = importlib.util.spec_from_file_location("write_skill1_handwritten", root / "write_skill1_handwritten.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    want = mod.skill1_records()
    got = sorted(importing.record_fields(d) for d in importing.read_skills_dir(root / "handwritten_skills_skill1").docs())
    assert got == sorted(want) and len(got) == 6
    heads = {h for _, h, _ in got}
    assert heads == {f"Use for {type_phrase(t)}." for t in mod.TASK_TYPE.values()}
    heat = next(s for sc, _, s in got if sc == type_phrase("pick_heat_then_place_in_recep"))
    assert '"heat X with microwave 1"' in heat and heat.startswith("1. Find the object X")
