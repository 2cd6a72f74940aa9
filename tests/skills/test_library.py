"""Skill1 library: EMA, admission, merge, eviction, SQLite persistence, export."""
import math
import sqlite3

import numpy as np
import pytest

from skillax.skills.lenient import read_skill_md
from skillax.skills.library import (
    LibraryError, LibrarySchemaError, SkillLibrary, SkillRecord, eviction_score, record_to_skill,
)
from skillax.skills.parsers import Distil, parse_distil
from skillax.skills.skill_md import parse_skill_md

LESSON = Distil((), True, "Heat the apple in the microwave, not on the stove.", "", "Heating food items")


def test_ema_hand_worked():
    lib = SkillLibrary(":memory:")
    a = lib.add("heat an apple", "Heating", "s1", step=0).id
    assert lib.get(a).utility == 0.5 and lib.get(a).count == 1
    assert lib.update_utilities([a], 1.0) == {a: pytest.approx(0.525, abs=1e-15)}
    assert lib.update_utilities([a, a], 0.0) == {a: pytest.approx(0.49875, abs=1e-15)}  # dup once
    assert lib.get(a).count == 3
    assert lib.update_utilities([a, 999], 1.0) == {a: pytest.approx(0.95 * 0.49875 + 0.05)}
    with pytest.raises(ValueError, match="reward must be finite"):
        lib.update_utilities([a], float("nan"))
    assert lib.admit(LESSON, float("nan"), "x", step=0).status == "rejected"


def test_ema_updates_are_row_updates(tmp_path):
    lib = SkillLibrary(tmp_path / "lib.db")
    ids = [lib.add(f"s{i}", "", f"strategy {i}", step=0).id for i in range(5)]
    before = lib.conn.total_changes
    lib.update_utilities(ids[:2], 1.0)
    assert lib.conn.total_changes - before == 2
    assert lib.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_eviction_scores():
    assert eviction_score(0.5, 1) == 0.5                        # log2(1 + 1) = 1
    assert eviction_score(0.5, 1, "paper_log_n") == 0.0          # ln(1) = 0
    assert eviction_score(0.6, 3) == pytest.approx(0.6 * 2.0)
    assert eviction_score(0.6, 3, "paper_log_n") == pytest.approx(0.6 * math.log(3))
    with pytest.raises(ValueError, match="eviction must be one of"):
        eviction_score(0.5, 1, "lru")


@pytest.mark.parametrize("eviction,expected_victim", [("log2_n_plus_1", "A"), ("paper_log_n", "B")])
def test_eviction_order_at_capacity(eviction, expected_victim):
    lib = SkillLibrary(":memory:", capacity=3, eviction=eviction)
    ids = {k: lib.add(f"scenario {k}", "", f"strategy {k}", step=0).id for k in "ABC"}
    for _ in range(40):                                   # A: retrieved 40 times, always failed
        lib.update_utilities([ids["A"]], 0.0)
    u_a = 0.5 * 0.95 ** 40                                # 0.064256, n = 41
    assert lib.get(ids["A"]).utility == pytest.approx(u_a)
    # released: A = u_a*log2(42) = 0.3465 < B = C = 0.5*log2(2) = 0.5  -> A goes first
    # paper:    A = u_a*ln(41)  = 0.2386 > B = C = 0.5*ln(1)   = 0    -> B (older of B, C)
    order = lib.eviction_order()
    assert order[0] == ids[expected_victim]
    adm = lib.add("scenario D", "", "strategy D", step=1)
    assert adm.status == "inserted" and adm.evicted == (ids[expected_victim],)
    assert len(lib) == 3 and ids[expected_victim] not in lib
    assert adm.id == 4  # AUTOINCREMENT: ids are never reused


def _toy_embed(texts):
    table = {"heat an apple": [1.0, 0.0], "heat a red apple": [0.9, math.sqrt(1 - 0.81)],
             "cool an apple": [0.8, 0.6]}
    return np.array([table[t] for t in texts])


def test_merge_rule():
    lib = SkillLibrary(":memory:", embed_fn=_toy_embed)
    a = lib.add("heat an apple", "Heating", "use microwave", step=0)
    m = lib.add("heat a red apple", "Heating", "use microwave", step=1)       # same strategy, cos .9
    assert m.status == "merged" and m.id == a.id and m.cosine == pytest.approx(0.9)
    assert lib.get(a.id).merges == 1 and lib.get(a.id).count == 1 and len(lib) == 1
    assert lib.add("cool an apple", "Heating", "use microwave", step=2).status == "inserted"   # cos .8
    assert lib.add("heat an apple", "Heating", "use the stove", step=3).status == "inserted"   # strategy differs
    assert len(lib) == 3
    plain = SkillLibrary(":memory:")  # no embed_fn: only identical scenario text merges
    plain.add("x", "", "s", step=0)
    assert plain.add("x", "", "s", step=0).status == "merged"
    assert plain.add("y", "", "s", step=0).status == "inserted"


def test_admission():
    lib = SkillLibrary(":memory:")
    assert lib.admit(LESSON, 0.0, "heat an apple", step=0).reason == "task not solved (r=0); not admitted"
    bad = parse_distil("no json here")
    assert lib.admit(bad, 1.0, "heat an apple", step=0).reason.startswith("invalid distil JSON: no JSON")
    trivial = Distil((), True, "none", "N/A.", "x")
    assert lib.admit(trivial, 1.0, "heat", step=0).reason.startswith("trivial lesson")
    ok = lib.admit(LESSON, 1.0, "  heat an apple ", step=7, attempt_type="retry")
    assert ok.admitted and len(lib) == 1
    rec = lib.get(ok.id)
    assert (rec.scenario, rec.description_head, rec.created_step, rec.attempt_type) == \
        ("heat an apple", "Heating food items", 7, "retry")
    assert rec.strategy == "Action lesson: Heat the apple in the microwave, not on the stove."
    assert lib.retrieval_texts() == {ok.id: "Heating food items"}


def test_restart_reproduces_state(tmp_path):
    path = tmp_path / "lib.db"
    with SkillLibrary(path, capacity=10) as lib:
        ids = [lib.add(f"s{i}", f"h{i}", f"st{i}", step=i).id for i in range(4)]
        lib.update_utilities(ids[:3], 1.0)
        lib.update_utilities(ids[1:], 0.0)
        state = lib.records()
    with SkillLibrary(path, capacity=10) as again:
        assert again.records() == state
        assert again.add("s9", "", "st9", step=9).id == 5


def test_state_bytes_and_snapshot(tmp_path):
    lib = SkillLibrary(tmp_path / "a.db")
    for i in range(3):
        lib.add(f"s{i}", "", f"st{i}", step=i)
    lib.update_utilities([1, 3], 1.0)
    data = lib.state_bytes()
    copy = SkillLibrary.from_bytes(data, tmp_path / "b.db")
    assert copy.records() == lib.records()
    assert copy.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    lib.snapshot_to(tmp_path / "c.db")
    assert SkillLibrary(tmp_path / "c.db").records() == lib.records()
    with pytest.raises(LibraryError, match="library bytes is not a usable SQLite database"):
        SkillLibrary.from_bytes(b"garbage" * 100, tmp_path / "d.db")


def test_foreign_files_rejected(tmp_path):
    lib = SkillLibrary(tmp_path / "v.db")
    with lib.conn:
        lib.conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    lib.close()
    with pytest.raises(LibrarySchemaError, match="schema_version 99; this skillax reads schema_version 2"):
        SkillLibrary(tmp_path / "v.db")
    other = sqlite3.connect(tmp_path / "o.db")
    other.execute("CREATE TABLE t(x)")
    other.commit()
    other.close()
    with pytest.raises(LibraryError, match="not a skillax skill library"):
        SkillLibrary(tmp_path / "o.db")
    (tmp_path / "g.db").write_bytes(b"this is not sqlite at all" * 50)
    with pytest.raises(LibraryError, match="not a usable SQLite database"):
        SkillLibrary(tmp_path / "g.db")
    with pytest.raises(ValueError, match="eviction must be one of"):
        SkillLibrary(":memory:", eviction="lru")


def test_source_tasks_recorded_merged_and_exported(tmp_path):
    """Issue 22 provenance: the inserting task's id, then each merged duplicate's (distinct);
    none known -> no `source-tasks` key."""
    lib = SkillLibrary(tmp_path / "s.db")
    a = lib.admit(LESSON, 1.0, "heat an apple", step=3, source_task="valid_train/heat-apple/trial_1")
    assert lib.get(a.id).source_tasks == ("valid_train/heat-apple/trial_1",)
    for t in ("valid_train/heat-apple/trial_2", "valid_train/heat-apple/trial_1", None):
        assert lib.admit(LESSON, 1.0, "heat an apple", step=4, source_task=t).status == "merged"
    rec = lib.get(a.id)
    assert (rec.merges, rec.source_tasks) == (3, ("valid_train/heat-apple/trial_1", "valid_train/heat-apple/trial_2"))
    assert lib.add("x", "", "raw actions", step=5, attempt_type="raw", source_task="t9").id == 2
    lib.add("y", "", "no source", step=5, attempt_type="imported")
    lib.close()
    again = SkillLibrary(tmp_path / "s.db")                            # persisted
    assert [r.source_tasks for r in again.records()] == [rec.source_tasks, ("t9",), ()]
    docs = [record_to_skill(r) for r in again.records()]
    assert docs[0].metadata["source-tasks"] == "valid_train/heat-apple/trial_1, valid_train/heat-apple/trial_2"
    assert (docs[1].metadata["source-tasks"], docs[1].metadata["reward-at-creation"]) == ("t9", 1.0)
    assert "source-tasks" not in docs[2].metadata and "reward-at-creation" not in docs[2].metadata


def test_exported_description_quotes_the_first_lesson_without_its_label():
    """Campaign 10: a hand-written strategy line "1. Find X (food: countertop, ...)" was cut at
    its first colon, so the exported description began mid-parenthesis. Only a leading label
    ("Action lesson:") or list number is dropped."""
    def desc(strategy):
        rec = SkillRecord(1, "put a hot egg in fridge", "Use for heating.", strategy, 0.5, 1, 0, "success", 0, ())
        return record_to_skill(rec).description

    assert desc("Action lesson: heat the egg with the microwave\nNavigation lesson: x").startswith(
        "Use for heating: heat the egg with the microwave. Use when")
    assert desc("1. Find the egg (food: countertop, fridge) and take it.").startswith(
        "Use for heating: Find the egg (food: countertop, fridge) and take it. Use when")
    assert desc("Find the object X: go to the countertop").startswith(
        "Use for heating: Find the object X: go to the countertop. Use when")


def test_schema_1_file_is_upgraded_in_place(tmp_path):
    """A library written before `source_tasks` (schema 1: a campaign checkpoint) still opens;
    its records' source tasks are unknown (empty), new ones record theirs."""
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE skills(id INTEGER PRIMARY KEY AUTOINCREMENT, scenario TEXT NOT NULL,
          description_head TEXT NOT NULL, strategy TEXT NOT NULL, utility REAL NOT NULL,
          count INTEGER NOT NULL, created_step INTEGER NOT NULL, attempt_type TEXT NOT NULL,
          merges INTEGER NOT NULL DEFAULT 0);
        INSERT INTO meta VALUES ('schema_version', '1');
        INSERT INTO skills (scenario, description_head, strategy, utility, count, created_step, attempt_type)
          VALUES ('cool a pan', 'Cooling', 'Action lesson: use the fridge.', 0.525, 2, 7, 'success');""")
    conn.commit()
    data = conn.serialize()
    conn.close()
    copy = SkillLibrary.from_bytes(data, tmp_path / "from-bytes.db")  # checkpoint payload path
    lib = SkillLibrary(path)
    for one in (lib, copy):
        assert one.records() == [SkillRecord(1, "cool a pan", "Cooling", "Action lesson: use the fridge.",
                                             0.525, 2, 7, "success", 0, ())]
        assert one.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("2",)
    assert lib.add("heat", "", "x", step=8, source_task="t1").id == 2
    assert lib.get(2).source_tasks == ("t1",)


def test_export_skill_md_readable_back(tmp_path):
    lib = SkillLibrary(":memory:", capacity=2)
    lib.admit(LESSON, 1.0, "heat an apple\r\nin the kitchen\x07", step=0)
    lib.add("Your task is to: cool a pan.", "", "Action lesson: fridge <first>.", step=1)
    out = tmp_path / "export"
    assert lib.export_skill_md(out) == ["heating-food-items", "cool-pan"]
    d1 = parse_skill_md((out / "heating-food-items" / "SKILL.md").read_text())
    assert d1.description == ("Heating food items: Heat the apple in the microwave, not on the stove. "
                              "Use when a task asks you to heat an apple in the kitchen, or a similar task.")
    assert d1.body == ("## Scenario\n\nheat an apple\nin the kitchen\n\n## Strategy\n\n"
                       "Action lesson: Heat the apple in the microwave, not on the stove.\n")
    assert d1.metadata == {"method": "skill1", "library-id": "1", "utility": "0.5", "count": "1",
                           "created-step": "0", "attempt-type": "success", "merges": "0",
                           "source": "learned", "description-head": "Heating food items",
                           "reward-at-creation": "1.0"}
    d2 = parse_skill_md((out / "cool-pan" / "SKILL.md").read_text())
    assert d2.description == ('Lessons for tasks like "cool a pan": fridge ‹first›. '
                              "Use when a task asks you to cool a pan, or a similar task.")
    lib.add("third", "", "x", step=2)                    # evicts record 1 (oldest of equal scores)
    assert lib.export_skill_md(out, provenance={"run-id": "r1"}) == ["cool-pan", "third"]
    assert sorted(p.name for p in out.iterdir()) == [".skillax-export.json", "cool-pan", "third"]
    assert read_skill_md((out / "third" / "SKILL.md").read_text()).warnings == ()
    assert parse_skill_md((out / "third" / "SKILL.md").read_text()).metadata["run-id"] == "r1"
