"""Rule bodies with stable ids and Skill-alpha edit actions on a worked example (bodies by hand)."""
import json

import pytest

from skillax.skills.edits import EditAction, apply_edit, edit_skill, parse_edit
from skillax.skills.rules import (
    Rule, RuleBody, make_rule_body, normalise_rule_text, parse_rules, render_rules, rules_of,
)
from skillax.skills.skill_md import SkillDoc, parse_skill_md, render_skill_md

BODY = """# Heating

- [R1] Find the object before going to the microwave.
- [R2] Open the microwave before putting the object in.
- [R3] Use the microwave, not the stove burner, to heat plates.
- [R4] Close the microwave after heating.
"""
SKILL = SkillDoc("alfworld-heat", "How to heat objects in ALFWorld.", BODY)


def out(action, target=None, content=None, think="short reason"):
    obj = {"action": action}
    if target is not None:
        obj["target"] = target
    if content is not None:
        obj["content"] = content
    return f"<think>{think}</think>\n{json.dumps(obj)}"


# ----------------------------------------------------------------------------- rules
def test_parse_render_rules():
    rb = parse_rules(BODY)
    assert rb.preamble == "# Heating"
    assert rb.ids == (1, 2, 3, 4) and rb.next_id == 5
    assert rb.rules[2] == Rule(3, "Use the microwave, not the stove burner, to heat plates.")
    assert render_rules(rb) == BODY


def test_multiline_rules_and_continuations():
    rb = RuleBody((Rule(2, "first line\n  indented code\n- [R9] not a rule"), Rule(7, "x")), 8)
    text = render_rules(rb)
    assert text == "- [R2] first line\n    indented code\n  - [R9] not a rule\n- [R7] x\n"
    assert parse_rules(text).rules == rb.rules


def test_duplicate_ids_renumbered_and_high_water_mark():
    rb = parse_rules("- [R2] a\n- [R2] b\n")
    assert rb.ids == (2, 3) and rb.renumbered == (2,) and rb.next_id == 4
    assert parse_rules("- [R2] a\n", next_id=10).next_id == 10


def test_normalise_rule_text():
    assert normalise_rule_text("- [R4] Keep it short.  \r\n\r\n  second  ") == "Keep it short.\n  second"
    assert normalise_rule_text("[r12]   x") == "x"
    assert normalise_rule_text("  \n ") == ""
    assert make_rule_body(["a", "- b"]).rules == (Rule(1, "a"), Rule(2, "b"))


# ----------------------------------------------------------------------------- valid edits
def test_create():
    r = edit_skill(SKILL, out("CREATE", content="Check the countertop first."))
    assert r.valid and r.reason is None and r.kind == "CREATE"
    assert r.skill.body == BODY + "- [R5] Check the countertop first.\n"
    assert r.skill.metadata == {"next-rule-id": 6}


def test_update_in_place_keeps_id():
    r = edit_skill(SKILL, out("UPDATE", ["R2"], "Open the microwave door, then put the object inside."))
    assert r.valid
    assert r.skill.body == """# Heating

- [R1] Find the object before going to the microwave.
- [R2] Open the microwave door, then put the object inside.
- [R3] Use the microwave, not the stove burner, to heat plates.
- [R4] Close the microwave after heating.
"""


def test_merge_at_first_listed_target_with_fresh_id():
    r = edit_skill(SKILL, out("MERGE", ["R4", "R2"], "Open the microwave, heat, then close it."))
    assert r.valid
    assert r.skill.body == """# Heating

- [R1] Find the object before going to the microwave.
- [R3] Use the microwave, not the stove burner, to heat plates.
- [R5] Open the microwave, heat, then close it.
"""
    r2 = edit_skill(SKILL, out("MERGE", ["R1", "R3", "R4"], "Find it, heat plates in the microwave, close it."))
    assert r2.skill.body == """# Heating

- [R5] Find it, heat plates in the microwave, close it.
- [R2] Open the microwave before putting the object in.
"""


def test_prune_and_noop():
    r = edit_skill(SKILL, out("PRUNE", ["R1", "R3"]))
    assert r.valid and r.skill.body == """# Heating

- [R2] Open the microwave before putting the object in.
- [R4] Close the microwave after heating.
"""
    n = edit_skill(SKILL, '{"action": "NOOP"}')
    assert n.valid and n.skill is SKILL


def test_ids_never_reused_across_a_sequence():
    z = SKILL
    z = edit_skill(z, out("PRUNE", ["R4"])).skill          # removes the max id
    z = edit_skill(z, out("CREATE", content="New rule.")).skill
    assert rules_of(z).ids == (1, 2, 3, 5)
    z = edit_skill(z, out("MERGE", ["R5", "R1"], "Merged.")).skill
    assert rules_of(z).ids == (2, 3, 6)
    # the high-water mark survives a disk round trip through metadata
    z = parse_skill_md(render_skill_md(z))
    z = edit_skill(z, out("PRUNE", ["R6"])).skill
    z = edit_skill(z, out("CREATE", content="Again.")).skill
    assert rules_of(z).ids == (2, 3, 7)
    assert z.body == ("# Heating\n\n- [R2] Open the microwave before putting the object in.\n"
                      "- [R3] Use the microwave, not the stove burner, to heat plates.\n- [R7] Again.\n")


def test_empty_skill_and_format_variants():
    z0 = SkillDoc("empty", "Starts empty.", "")
    r = edit_skill(z0, '```json\n{"action": "create", "content": "- [R3] First rule."}\n```')
    assert r.valid and r.skill.body == "- [R1] First rule.\n"
    r = edit_skill(r.skill, 'reasoning only</think>{"action":"UPDATE","target":["[r1]"],"content":"x"}')
    assert r.valid and r.skill.body == "- [R1] x\n" and r.action.think == "reasoning only"


# ----------------------------------------------------------------------------- invalid edits
@pytest.mark.parametrize("output,reason", [
    (out("CREATE", ["R1"], "x"), "CREATE takes no target"),
    (out("CREATE"), "CREATE needs non-empty content"),
    (out("CREATE", content="- [R7]"), "empty after removing the rule tag"),
    (out("CREATE", content="x" * 2001), "content has 2001 characters (max 2000)"),
    (out("CREATE", content="bad\x00char"), "control/invalid character U+0000"),
    (out("UPDATE", ["R1", "R2"], "x"), "UPDATE needs exactly one target, got 2"),
    (out("UPDATE", ["R9"], "x"), "target R9 does not exist (rules: R1, R2, R3, R4)"),
    (out("UPDATE", ["R1"]), "UPDATE needs non-empty content"),
    (out("MERGE", ["R1"], "x"), "MERGE needs at least two targets, got 1"),
    (out("MERGE", ["R1", "R1"], "x"), "duplicate target R1"),
    (out("MERGE", ["R1", "R2"]), "MERGE needs non-empty content"),
    (out("MERGE", ["R1", "R8"], "x"), "target R8 does not exist"),
    (out("PRUNE"), "PRUNE needs at least one target"),
    (out("PRUNE", ["R1"], "x"), "PRUNE takes no content"),
    (out("PRUNE", ["R5"]), "target R5 does not exist"),
    (out("NOOP", ["R1"]), "NOOP takes no target"),
    (out("NOOP", content="x"), "NOOP takes no content"),
    ('{"action": "DELETE", "target": ["R1"]}', "action must be one of CREATE|UPDATE|MERGE|PRUNE|NOOP"),
    ('{"target": ["R1"]}', "action must be one of"),
    ("<think>thinking", "unclosed <think> block"),
    ("I will update R1.", "expected one JSON object"),
    ("", "no JSON object in the output"),
    ('{"action": "NOOP"', "invalid JSON"),
    ('{"action": "NOOP"} and then more', "unexpected text after the JSON object"),
    ('{"action": "NOOP"}{"action": "NOOP"}', "unexpected text after the JSON object"),
    ('[{"action": "NOOP"}]', "expected one JSON object"),
    ('{"action": "NOOP", "reason": "x"}', "unknown keys ['reason']"),
    ('{"action": "PRUNE", "target": "R1"}', "target must be a list"),
    ('{"action": "PRUNE", "target": ["X3"]}', "is not a rule id like 'R3'"),
    ('{"action": "PRUNE", "target": [3]}', "is not a rule id like 'R3'"),
    ('{"action": "CREATE", "content": 5}', "content must be a string"),
])
def test_invalid_edits_have_reason_and_unchanged_skill(output, reason):
    r = edit_skill(SKILL, output)
    assert not r.valid
    assert reason in r.reason, r.reason
    assert r.skill is SKILL


def test_apply_edit_guards():
    assert not apply_edit(SKILL, "CREATE").valid  # type: ignore[arg-type]
    p = parse_edit(out("PRUNE", ["R2"]))
    assert p.ok and p.action == EditAction("PRUNE", ("R2",), None, "short reason")
    too_long = SkillDoc("s", "d", "- [R1] " + "x" * 262_130 + "\n")
    r = apply_edit(too_long, EditAction("CREATE", (), "y" * 100))
    assert not r.valid and "body has" in r.reason and r.skill is too_long
