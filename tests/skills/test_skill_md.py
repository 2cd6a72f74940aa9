"""SKILL.md strict parse/render round-trip, validation, and the lenient reader on crafted inputs."""
import pytest

from skillax.skills.lenient import normalise_name, read_skill_md
from skillax.skills.skill_md import (
    SkillDoc, SkillFormatError, make_skill, parse_skill_md, render_skill_md, validate_name,
)

GOOD = SkillDoc("pdf-tables", "Extract tables from PDFs. Use when the user: asks for tables.",
                "# PDF tables\n\n1. Open the file.\n2. Find the grid.\n",
                {"author": "skillax", "tags": ["pdf", "tables"], "version": 2, "nested": {"a": None}})


def test_render_exact_text_and_round_trip():
    doc = SkillDoc("my-skill", "Does X.", "Body line\n")
    assert render_skill_md(doc) == "---\nname: my-skill\ndescription: Does X.\n---\nBody line\n"
    text = render_skill_md(GOOD)
    back = parse_skill_md(text)
    assert back == GOOD
    assert render_skill_md(back) == text


@pytest.mark.parametrize("desc", [
    "line one\nline two", "yes", "123", "- starts with dash", "--- x", "a: b # c", "'quoted' \"both\"",
    "tab\there", "unicode — ✓ 中文", "x" * 1024,
])
def test_description_round_trips(desc):
    doc = SkillDoc("s", desc, "")
    assert parse_skill_md(render_skill_md(doc)) == doc


@pytest.mark.parametrize("body", ["", "no newline at end", "---\nnot frontmatter\n---\n", "\n\nlead\n",
                                  "name: fake\n"])
def test_body_byte_exact(body):
    doc = SkillDoc("s", "d", body)
    assert parse_skill_md(render_skill_md(doc)).body == body


@pytest.mark.parametrize("name,fragment", [
    ("../x", "invalid"), ("a/b", "invalid"), ("x" * 65, "65 characters"), ("Upper", "invalid"),
    ("", "empty"), ("-lead", "invalid"), ("trail-", "invalid"), ("a--b", "invalid"),
    ("a_b", "invalid"), (".", "invalid"), ("..", "invalid"), ("ok\n", "invalid"), (7, "string"),
])
def test_bad_names_rejected(name, fragment):
    with pytest.raises(SkillFormatError, match=fragment):
        validate_name(name)
    with pytest.raises(SkillFormatError):
        render_skill_md(SkillDoc(name, "d", ""))


def test_name_limits():
    assert validate_name("a" * 64) == "a" * 64
    assert validate_name("a-1-b") == "a-1-b"


@pytest.mark.parametrize("desc,fragment", [
    ("", "empty"), ("   ", "empty"), ("x" * 1025, "1025 characters"), ("a\rb", "carriage"),
    ("bell\x07", "U\\+0007"), ("\ud800", "U\\+D800"), (None, "string"),
])
def test_bad_descriptions(desc, fragment):
    with pytest.raises(SkillFormatError, match=fragment):
        render_skill_md(SkillDoc("s", desc, ""))


def test_make_skill_normalises_crlf():
    d = make_skill("s", "a\r\nb", "x\r\ny\rz")
    assert d.description == "a\nb" and d.body == "x\ny\nz"


PY_OBJ = "---\nname: evil\ndescription: !!python/object/apply:os.system ['echo pwned']\n---\nbody\n"
PY_OBJ2 = "---\n!!python/object:collections.OrderedDict\nname: evil\ndescription: d\n---\n"


@pytest.mark.parametrize("text", [PY_OBJ, PY_OBJ2])
def test_python_tags_rejected_safely(text, capfd):
    with pytest.raises(SkillFormatError, match="unsafe or unknown YAML tag"):
        parse_skill_md(text)
    r = read_skill_md(text)
    assert r.doc is None and r.error.startswith("unsafe or unknown YAML tag")
    assert "pwned" not in capfd.readouterr().out


@pytest.mark.parametrize("text,fragment", [
    ("# no frontmatter\n", "no frontmatter"),
    ("---\nname: a\ndescription: b\n", "not closed"),
    ("---\n- a\n- b\n---\n", "mapping"),
    ("---\nname: a\n---\n", "missing required field 'description'"),
    ("---\nname: a\ndescription: b\nversion: 2\n---\n", "unexpected frontmatter keys"),
    ("---\nname: a\ndescription: b\nlicense: [MIT]\n---\n", "license must be a string"),
    ("---\nname: a\ndescription: b\ncompatibility: ''\n---\n", "compatibility is empty"),
    ("---\nname: a\ndescription: b\ncompatibility: " + "x" * 501 + "\n---\n", "501 characters"),
    ("---\nname: a\ndescription: b\nmetadata: 3\n---\n", "metadata must be a map"),
    ("---\nname: a\ndescription: b\nmetadata: {d: !!timestamp 2026-01-02}\n---\n", "unsupported type date"),
    ("---\nname: a\r\ndescription: b\n---\n", "carriage return"),
    ("---\nname: [a\n---\n", "YAML error"),
])
def test_strict_rejections(text, fragment):
    with pytest.raises(SkillFormatError, match=fragment):
        parse_skill_md(text)


def test_lenient_repairs():
    text = ("\ufeff---\r\nName: Apollo Automation\r\ndescription: >-\r\n  folded\r\n  text\r\n"
            "license: MIT\r\nversion: 1.2\r\nmetadata:\r\n  updated: 2026-03-17\r\n  n: 3\r\n"
            "  at: !!timestamp 2026-03-18\r\nallowed-tools: [Read, Bash]\r\n---\r\nBody\r\n")
    r = read_skill_md(text, dirname="apollo-automation")
    assert r.ok, r.error
    assert r.doc.name == "apollo-automation"
    assert r.doc.description == "folded text"
    assert r.doc.body == "Body\n"
    # spec fields stay top-level; a plain date stays its text; unknown fields go to metadata
    assert r.doc.metadata == {"updated": "2026-03-17", "n": 3, "at": "2026-03-18", "version": 1.2}
    assert (r.doc.license, r.doc.allowed_tools, r.doc.compatibility) == ("MIT", "Read Bash", None)
    w = " | ".join(r.warnings)
    for frag in ("byte-order mark", "CRLF", "'Name' used as 'name'", "normalised to 'apollo-automation'",
                 "block scalar ('>-')", "ISO strings", "['version'] kept inside metadata",
                 "allowed-tools given as a YAML list"):
        assert frag in w, (frag, w)
    assert parse_skill_md(render_skill_md(r.doc)) == r.doc


def test_lenient_yaml_fallback_and_long_description():
    text = "---\nname: superpowers-debug\ndescription: Debugging: reproduce, isolate.\n---\n# Debug\n"
    r = read_skill_md(text)
    assert r.ok and r.doc.description == "Debugging: reproduce, isolate."
    assert "line-based" in r.warnings[0] and "mapping values are not allowed here" in r.warnings[0]
    long = " ".join(["word"] * 400)  # 1999 chars
    r = read_skill_md(f"---\nname: x\ndescription: {long}\n---\n")
    assert r.ok and len(r.doc.description) <= 1024 and r.doc.description.endswith("word")
    assert any("truncated to" in w for w in r.warnings)


@pytest.mark.parametrize("text,fragment", [
    (b"---\nname: a\ndescription: \xff\n---\n", "not UTF-8"),
    ("---\nname: '!!!'\ndescription: d\n---\n", "no usable characters"),
    ("---\nname: a\ndescription: [1, 2]\n---\n", "description must be a string"),
    ("---\nname: a\ndescription: '  '\n---\n", "description is empty"),
    ("---\nname: a\n---\n", "missing required field 'description'"),
    ("---\nfoo: [unclosed\n---\n", "YAML error"),
])
def test_lenient_rejections(text, fragment):
    r = read_skill_md(text)
    assert r.doc is None and fragment in r.error


def test_lenient_uses_folder_for_missing_name():
    r = read_skill_md("---\ndescription: d\n---\n", dirname="from-folder")
    assert r.ok and r.doc.name == "from-folder"


def test_normalise_name():
    assert normalise_name("Customer.io Automation") == "customer-io-automation"
    assert normalise_name("-21risk-automation") == "21risk-automation"
    assert normalise_name("capsule_crm--x") == "capsule-crm-x"
    assert normalise_name("A" * 70 + "-b") == "a" * 64


def test_deep_flow_nesting_refused_fast():
    # refused by the depth check before YAML recurses (the error names the limit); how fast is
    # not asserted here (wall time is flaky on shared machines)
    with pytest.raises(SkillFormatError, match="nested deeper than 64 levels"):
        parse_skill_md("---\nname: a\ndescription: " + "[" * 20_000 + "\n---\n")
    doc = SkillDoc("a", "[" * 1024, "")  # brackets inside a quoted scalar are not nesting
    assert parse_skill_md(render_skill_md(doc)) == doc


SPEC_FILE = ("---\nname: pdf-tables\ndescription: Extract tables. Use when asked for tables.\n"
             "license: Apache-2.0\ncompatibility: Needs Python 3.11+\nmetadata:\n  author: me\n"
             "  updated: '2026-03-17'\nallowed-tools: Read Bash(python:*)\n---\n# Tables\n")


def test_spec_fields_strict_and_lenient_agree_and_round_trip():
    doc = parse_skill_md(SPEC_FILE)
    assert (doc.license, doc.compatibility, doc.allowed_tools) == \
        ("Apache-2.0", "Needs Python 3.11+", "Read Bash(python:*)")
    assert doc.metadata == {"author": "me", "updated": "2026-03-17"}
    r = read_skill_md(SPEC_FILE, dirname="pdf-tables")
    assert r.doc == doc and r.warnings == ()
    assert render_skill_md(doc) == SPEC_FILE      # the renderer's own order and quoting: byte-stable
    assert parse_skill_md("---\nname: a\ndescription: b\nmetadata: {d: 2026-01-02}\n---\n").metadata == \
        {"d": "2026-01-02"}                        # timestamps are not resolved (strictyaml reads so too)
