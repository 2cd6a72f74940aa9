"""SkillRepo: atomic writes, changelog, snapshots, state, path safety."""
import os

import pytest

from skillax.skills.repo import SkillRepo, SkillRepoError, atomic_write_text
from skillax.skills.skill_md import SkillDoc, parse_skill_md


@pytest.fixture
def repo(tmp_path):
    return SkillRepo(tmp_path / "skills")


def test_insert_update_delete_files_and_changelog(repo):
    repo.insert("heat-food", "Heat food with the microwave.", "- [R1] Open it.\n", step=3)
    path = repo.root / "heat-food" / "SKILL.md"
    assert parse_skill_md(path.read_text()) == SkillDoc("heat-food", "Heat food with the microwave.",
                                                        "- [R1] Open it.\n")
    repo.update("heat-food", body="- [R1] Open it first.\n", step=4)
    d = repo.get("heat-food")
    assert d.description == "Heat food with the microwave." and d.body == "- [R1] Open it first.\n"
    with pytest.raises(SkillRepoError, match="already exists"):
        repo.insert("heat-food", "x", "", step=5)
    repo.delete("heat-food", step=6)
    assert not path.parent.exists() and len(repo) == 0
    log = repo.read_changelog()
    assert [(e["op"], e["applied"], e["step"]) for e in log] == [
        ("insert", True, 3), ("update", True, 4), ("insert", False, 5), ("delete", True, 6)]
    assert log[2]["error"] == "skill 'heat-food' already exists (use update)"
    assert log[0]["args"] == {"name": "heat-food", "description": "Heat food with the microwave.",
                              "body": "- [R1] Open it.\n"}
    assert all(isinstance(e["time"], float) for e in log)
    assert not [p for p in repo.root.rglob("*") if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".", "/etc/passwd", "x" * 65, "Upper", "",
                                  "-rf", "a\nb", "a\x00b", "~root"])
def test_names_cannot_escape(repo, name):
    with pytest.raises(SkillRepoError):
        repo.insert(name, "d", "b")
    with pytest.raises(SkillRepoError):
        repo.path_of(name)
    assert list(repo.root.parent.glob("x*")) == []
    assert repo.read_changelog()[-1]["applied"] is False


def test_symlinked_folder_refused(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo.root / "evil")
    with pytest.raises(SkillRepoError, match="symlink"):
        repo.insert("evil", "d", "b")
    assert list(outside.iterdir()) == []


def test_update_rules(repo):
    with pytest.raises(SkillRepoError, match="no skill named 'nope' to update"):
        repo.update("nope", body="x")
    repo.insert("a", "d", "b")
    with pytest.raises(SkillRepoError, match="at least one"):
        repo.update("a")
    with pytest.raises(SkillRepoError, match="description has 1025"):
        repo.update("a", description="x" * 1025)
    assert repo.get("a").description == "d"


def test_snapshot_restore_only_rewrites_differences(repo):
    for n in ("a", "b", "c"):
        repo.insert(n, f"skill {n}", f"body {n}\n")
    snap = repo.snapshot()
    mtimes = {n: os.stat(repo.path_of(n)).st_mtime_ns for n in ("a", "b")}
    repo.update("c", body="changed\n")
    repo.delete("b")
    repo.insert("d", "new", "")
    assert snap.texts.keys() == {"a", "b", "c"}           # snapshot unaffected (copy-on-write)
    assert repo.restore(snap) == 3                         # b written, c written, d deleted
    assert repo.names() == ["a", "b", "c"] and repo.get("c").body == "body c\n"
    assert os.stat(repo.path_of("a")).st_mtime_ns == mtimes["a"]
    assert repo.read_changelog()[-1]["args"] == {"written": ["b", "c"], "deleted": ["d"]}
    assert repo.restore(snap) == 0
    assert repo.verify() == []


def test_state_round_trip_and_reopen(repo, tmp_path):
    repo.insert("a", "d a", "x\n")
    repo.insert("b", "d b", "")
    st = repo.state()
    other = SkillRepo.from_state(tmp_path / "other", st)
    assert other.state()["skills"] == st["skills"]
    reopened = SkillRepo(repo.root)
    assert reopened.state() == st
    with pytest.raises(SkillRepoError, match="not a skill repo state"):
        other.load_state({"skills": {}})


def test_open_folder_with_bad_file(tmp_path):
    root = tmp_path / "r"
    (root / "bad").mkdir(parents=True)
    (root / "bad" / "SKILL.md").write_text("---\nname: other\ndescription: d\n---\n")
    with pytest.raises(SkillRepoError, match="differs from its folder"):
        SkillRepo(root)
    r = SkillRepo(root, strict_load=False)
    assert len(r) == 0 and "differs" in r.load_problems[0]
    (root / "bad" / "SKILL.md").unlink()
    (root / "Not A Skill").mkdir()
    (root / "README.md").write_text("x")
    assert SkillRepo(root).names() == []  # folders without SKILL.md and files are ignored


def test_size_tokens(repo):
    repo.insert("a", "d", "one two three")
    repo.insert("b", "d", "four")
    words = lambda t: len(t.split())
    assert repo.size_tokens(words) == sum(len(repo.text(n).split()) for n in ("a", "b"))
    assert repo.size_chars() == len(repo.text("a")) + len(repo.text("b"))


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "f.txt"
    atomic_write_text(p, "old")

    def boom(*a):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(p, "new")
    assert p.read_text() == "old" and [q.name for q in tmp_path.iterdir()] == ["f.txt"]
