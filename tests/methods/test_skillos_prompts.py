"""SkillOS prompts: Qwen3 tool format (template tools argument == embedded block), self-judgement."""
import functools

import pytest

from skillax.methods.skillos import prompts
from skillax.methods.skillos.rollout import fit_view
from skillax.skills.skill_md import make_skill
from skillax.skills.tool_calls import TOOL_SCHEMAS, parse_tool_calls
from skillax.tokenizers.chat import render


@functools.lru_cache(maxsize=None)
def tokenizer(name):
    from skillax.tokenizers.loader import load_tokenizer

    return load_tokenizer(name)


DOC = make_skill("heat-food", "Heat an object with the microwave.", "1. take it\n2. heat it with microwave 1")


def msgs():
    return prompts.curator_messages("heat some egg and put it in fridge", True,
                                    "Task [t]: heat egg\nStep 1: > go to microwave 1", [DOC], ["heat-food"])


def test_qwen3_tools_argument_equals_embedded_block():
    tok = tokenizer("qwen3")
    assert prompts.template_renders_tools(tok)
    via_template = render(tok, msgs(), add_generation_prompt=True, tools=TOOL_SCHEMAS)
    embedded = render(tok, prompts.embed_tools(msgs()), add_generation_prompt=True)
    assert via_template == embedded
    assert "<tools>\n{\"type\": \"function\"" in via_template
    assert via_template.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    ids = prompts.curator_prompt_ids(tok, msgs())
    assert ids == tok.encode(via_template, add_special_tokens=False)


def test_smollm2_template_gets_the_block_in_its_system_turn():
    tok = tokenizer("smollm2")
    assert not prompts.template_renders_tools(tok)
    text = tok.decode(prompts.curator_prompt_ids(tok, msgs(), prefix="<tool_call>\n"))
    assert text.startswith("<|im_start|>system\n" + prompts.CURATOR_SYSTEM + "\n\n# Tools\n")
    assert '{"name": <function-name>, "arguments": <args-json-object>}' in text
    assert text.endswith("<|im_start|>assistant\n<tool_call>\n")
    assert "Retrieved skills:\n[1]\n---\nname: heat-food" in text
    assert "Outcome (judged by the agent): success" in text


def test_tool_call_text_round_trips_through_the_parser():
    t = prompts.tool_call_text("update_skill", {"name": "heat-food", "body": "é ok"})
    (call,) = parse_tool_calls(t)
    assert call.error is None and call.arguments == {"name": "heat-food", "body": "é ok"}


def test_self_judgement_parse():
    assert prompts.parse_self_judgement("Yes, I put it there.") is True
    assert prompts.parse_self_judgement("<think>yes?</think>No.") is False
    assert prompts.parse_self_judgement("maybe") is None
    assert prompts.parse_self_judgement(None) is None


def test_executor_skill_text_and_empty_retrieval():
    assert prompts.executor_skill_text(DOC) == "heat-food: Heat an object with the microwave.\n1. take it\n2. heat it with microwave 1"
    assert prompts.format_retrieved([], 100) == "(none)"


def test_fit_view_cuts_the_middle_to_the_budget():
    tok = tokenizer("smollm2")
    view = "Task [t]: x\n" + "\n".join(f"Step {i}: > go to cabinet {i}\n  You see nothing." for i in range(60))

    def build(v):
        return prompts.curator_prompt_ids(tok, prompts.curator_messages("x", False, v, [], []))
    full = len(build(view))
    shown, ids = fit_view(view, build, full - 100)
    assert len(ids) <= full - 100 and len(ids) > full - 140
    assert shown.startswith("Task [t]: x") and "[... truncated ...]" in shown
    assert shown.endswith("You see nothing.")
    assert fit_view(view, build, 10)[0] == ""          # nothing fits: empty view


def test_fit_curator_prompt_drops_skills_then_names_then_refuses():
    from skillax.methods.skillos.rollout import RolloutConfig, fit_curator_prompt

    tok = tokenizer("smollm2")
    big = [make_skill(f"s{i}", "D" * 500, "x " * 300) for i in range(3)]
    names = [f"skill-{i}" for i in range(30)]
    base = len(prompts.curator_prompt_ids(tok, prompts.curator_messages("g", True, "", [], [])))
    with_names = len(prompts.curator_prompt_ids(tok, prompts.curator_messages("g", True, "", [], names)))
    view, ids = fit_curator_prompt(tok, "g", True, "Step 1: > go", big, names,
                                   RolloutConfig(max_prompt_tokens=with_names + 5, max_skill_chars=600))
    assert len(ids) <= with_names + 5 and "Retrieved skills:\n(none)" in tok.decode(ids)
    view, ids = fit_curator_prompt(tok, "g", True, "Step 1: > go", big, names,
                                   RolloutConfig(max_prompt_tokens=base + 2))
    assert "Skills in the repository: (empty)" in tok.decode(ids)
    with pytest.raises(ValueError, match="max_prompt_tokens"):
        fit_curator_prompt(tok, "g", True, "v", [], [], RolloutConfig(max_prompt_tokens=base - 10))
