"""The 117 real SKILL.md files of ../shared/data/skills_corpus through the lenient reader."""
import json

import pytest

from skillax.skills.lenient import read_skill_md
from skillax.skills.repo import SkillRepo
from skillax.skills.skill_md import parse_skill_md, render_skill_md
from tests.conftest import needs_shared

pytestmark = needs_shared


@pytest.fixture(scope="module")
def corpus(request):
    from tests.conftest import SHARED
    root = SHARED / "data" / "skills_corpus"
    manifest = [json.loads(l) for l in (root / "manifest.jsonl").read_text().splitlines() if l.strip()]
    out = []
    for m in manifest:
        path = root / m["file"]
        out.append((m, read_skill_md(path.read_bytes(), dirname=path.parent.name)))
    return out


def test_every_file_read_or_rejected_with_reason(corpus):
    assert len(corpus) == 117
    rejected = {m["file"]: r.error for m, r in corpus if not r.ok}
    # The only file without frontmatter; YAML-broken ones are recovered by the line reader.
    assert rejected == {"alirezarezvani__claude-skills/sample-skill/SKILL.md":
                        "no frontmatter: the file does not start with a '---' line"}
    for m, r in corpus:
        assert (r.doc is None) == (r.error is not None)


def test_written_back_is_spec_valid_and_round_trips(corpus, tmp_path):
    repo = SkillRepo(tmp_path / "repo", durable=False)
    for m, r in corpus:
        if not r.ok:
            continue
        text = render_skill_md(r.doc)
        back = parse_skill_md(text)  # strict
        assert (back.name, back.description, back.body) == (r.doc.name, r.doc.description, r.doc.body)
        assert back.metadata == r.doc.metadata
        assert 1 <= len(back.description) <= 1024
        if r.doc.name not in repo:
            repo.put(r.doc)
    assert repo.verify() == []
    assert SkillRepo(tmp_path / "repo").names() == repo.names()


def test_manifest_observations_match_warnings(corpus):
    for m, r in corpus:
        if not r.ok:
            continue
        w = " | ".join(r.warnings)
        if m["frontmatter_parses"] is False:
            assert "line-based" in w and r.doc.name == m["fallback_name"], m["file"]
        if m["name"] is not None and not m["name_spec_valid"]:
            assert "normalised to" in w, m["file"]
        if m["name"] is not None and m["name_spec_valid"]:
            assert r.doc.name == m["name"], m["file"]
        if m["description_over_1024"]:
            assert "truncated to" in w and len(r.doc.description) <= 1024
        elif m["description_len"] is not None:  # only stripping (e.g. a '|' block's last newline)
            assert 0 <= m["description_len"] - len(r.doc.description) <= 1, m["file"]
        if "crlf_line_endings" in m["oddities"]:
            assert "CRLF" in w and "\r" not in r.doc.body
        for f in m["extra_fields"] or []:
            if f != "metadata":
                assert f in r.doc.metadata or f"{f}-top-level" in r.doc.metadata, (m["file"], f)


def test_specific_files(corpus):
    by = {m["file"].rsplit("/", 2)[-2]: r for m, r in corpus}
    assert by["apollo-automation"].doc.name == "apollo-automation"
    assert by["-21risk-automation"].doc.name == "21risk-automation"
    c2p = by["code-to-prd"].doc
    assert c2p.name == "code-to-prd" and c2p.metadata["Name"] == "code-to-prd"
    assert "\n\nTrigger when users mention" in c2p.description
    cl = by["c-level-skills"]
    assert cl.doc.name == "c-level-advisor"
    assert cl.doc.metadata["updated"] == "2026-03-05" and cl.doc.metadata["skills_count"] == 28
    assert "name 'c-level-advisor' does not match folder 'c-level-skills'" in cl.warnings
    mm = by["markdown-mermaid-writing"].doc.metadata
    assert mm["skill-contributors"][0]["name"] == "Clayton Young"
    api = by["claude-api"]  # 1,068 chars in a |- block -> cut at the last space before 1024
    assert len(api.doc.description) == 1023 and "1068 characters; truncated to 1023" in api.warnings[1]
    assert by["template-skill"].ok
