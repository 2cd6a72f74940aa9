"""SkillOS tool calls: parsing, jsonschema validation, application, r_fc counts."""
import json

import jsonschema
import pytest

from skillax.skills.repo import SkillRepo
from skillax.skills.tool_calls import (
    TOOL_SCHEMAS, apply_tool_calls, function_call_reward, parse_tool_calls, validate_call,
)


def tc(fn, /, **arguments):
    return f"<tool_call>\n{json.dumps({'name': fn, 'arguments': arguments})}\n</tool_call>"


@pytest.fixture
def repo(tmp_path):
    return SkillRepo(tmp_path / "r", durable=False)


def test_schemas_are_openai_function_format():
    assert [t["function"]["name"] for t in TOOL_SCHEMAS] == ["insert_skill", "update_skill", "delete_skill"]
    for t in TOOL_SCHEMAS:
        assert t["type"] == "function"
        jsonschema.Draft202012Validator.check_schema(t["function"]["parameters"])
    assert TOOL_SCHEMAS[0]["function"]["parameters"]["required"] == ["name", "description", "body"]
    assert TOOL_SCHEMAS[1]["function"]["parameters"]["required"] == ["name"]


def test_well_formed_single_call(repo):
    text = "<think>add a skill</think>\n" + tc("insert_skill", name="cool-items",
                                               description="Cool items with the fridge.", body="- Use fridge.")
    rep = apply_tool_calls(repo, text, step=1)
    assert rep.n_total == 1 and rep.n_applied == 1 and rep.r_fc() == 1.0
    assert repo.get("cool-items").body == "- Use fridge."


def test_multiple_and_partially_valid(repo):
    text = "\n".join([
        tc("insert_skill", name="a-skill", description="A.", body="a"),        # applied
        tc("insert_skill", name="Bad Name", description="B.", body="b"),       # schema: pattern
        tc("update_skill", name="a-skill", body="a2"),                          # applied
        tc("update_skill", name="a-skill"),                                     # needs a field
        tc("update_skill", name="ghost", body="x"),                             # repo: missing
        "<tool_call>{not json}</tool_call>",                                    # JSON error
        tc("rename_skill", name="a-skill"),                                     # unknown function
        tc("insert_skill", name="c", description="C.", body="c", extra=1),     # unknown argument
        tc("insert_skill", name="a-skill", description="dup", body=""),        # exists
        tc("delete_skill", name="a-skill"),                                     # applied
    ])
    rep = apply_tool_calls(repo, text, step=2)
    assert [c.applied for c in rep.calls] == [True, False, True, False, False, False, False, False,
                                              False, True]
    errs = [c.error for c in rep.calls]
    assert "does not match" in errs[1]
    assert errs[3] == "update_skill needs at least one of description, body"
    assert errs[4] == "no skill named 'ghost' to update"
    assert errs[5].startswith("invalid JSON")
    assert errs[6].startswith("unknown function 'rename_skill'")
    assert errs[7] == "unknown argument(s) ['extra']"
    assert errs[8] == "skill 'a-skill' already exists (use update)"
    assert rep.n_total == 10 and rep.n_applied == 3 and rep.r_fc() == pytest.approx(0.3)
    assert len(repo) == 0
    log = repo.read_changelog()
    assert len(log) == 10 and sum(e["applied"] for e in log) == 3


def test_malformed_tags_counted():
    calls = parse_tool_calls("</tool_call> x <tool_call>{}<tool_call>" + json.dumps(
        {"name": "delete_skill", "arguments": {"name": "a"}}) + "</tool_call><tool_call>{\"name\"")
    assert [c.error is None for c in calls] == [False, False, True, False]
    assert calls[0].error == "</tool_call> without an opening <tool_call>"
    assert calls[1].error == "unclosed <tool_call> (a new <tool_call> began)"
    assert calls[3].error == "unclosed <tool_call> at end of output"


def test_zero_calls_and_reasoning_ignored(repo):
    rep = apply_tool_calls(repo, "<think>maybe <tool_call>{}</tool_call></think>No changes needed.")
    assert rep.n_total == 0 and rep.r_fc() == 0.0 and rep.r_fc(empty_value=1.0) == 1.0
    assert function_call_reward([rep, rep]) == 0.0


def test_arguments_as_json_string_and_limits(repo):
    s = json.dumps({"name": "insert_skill", "arguments": json.dumps({"name": "x", "description": "d", "body": ""})})
    assert apply_tool_calls(repo, f"<tool_call>{s}</tool_call>").n_applied == 1
    assert validate_call("insert_skill", {"name": "y", "description": "d" * 1025, "body": ""}) == \
        "argument 'description' has 1025 characters (max 1024)"
    assert validate_call("delete_skill", {"name": "y" * 65}) == "argument 'name' has 65 characters (max 64)"
    assert validate_call("delete_skill", {"name": 3}) == "argument 'name' must be of type string, got int"
    assert validate_call("delete_skill", {}) == "arguments: 'name' is a required property"
    assert validate_call("delete_skill", []) == "arguments must be an object, got list"
    # passes the ECMA pattern under Python's re.search, but the repo's name check rejects it
    rep = apply_tool_calls(repo, tc("insert_skill", name="z\n", description="d", body=""))
    assert rep.n_applied == 0 and "invalid" in rep.calls[0].error


def test_function_call_reward_over_rollout(repo):
    r1 = apply_tool_calls(repo, tc("insert_skill", name="a", description="d", body=""))
    r2 = apply_tool_calls(repo, tc("delete_skill", name="b") + tc("delete_skill", name="a"))
    r3 = apply_tool_calls(repo, "nothing")
    assert function_call_reward([r1, r2, r3]) == pytest.approx(2 / 3)


def test_flood_of_calls_is_capped(repo):
    text = "".join(tc("delete_skill", name=f"s{i}") for i in range(200))
    rep = apply_tool_calls(repo, text, max_calls=64)
    assert rep.n_total == 65 and rep.n_applied == 0
    assert rep.calls[-1].error.startswith("too many tool calls: only the first 64")
    assert len(repo.read_changelog()) == 65
    assert len(parse_tool_calls("<tool_call>" * 70, max_calls=64)) == 65
