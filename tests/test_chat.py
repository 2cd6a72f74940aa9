"""Chat templates and assistant masks (Qwen3 ChatML written here; SmolLM2's from its GGUF)."""
import pytest

from skillax.tokenizers import (
    assistant_spans,
    encode_chat,
    load_qwen3_tokenizer,
    render,
    render_with_masks,
)
from tests._smollm2 import smollm2

WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Get weather",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
}
TOOL_CONVERSATION = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": '{"temp": 21}'},
    {"role": "tool", "content": "sunny"},
    {"role": "assistant", "content": "It is 21°C and sunny."},
]
TOOL_CALL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
EMPTY_THINK = "<think>\n\n</think>\n\n"


@pytest.fixture(scope="module")
def qwen():
    return load_qwen3_tokenizer()


@pytest.fixture(scope="module")
def smol():
    return smollm2()[2]


def mask_runs(tok, ids, mask):
    """Decoded text of each maximal run of mask == 1."""
    runs, cur = [], []
    for i, m in zip(ids, mask):
        if m:
            cur.append(i)
        elif cur:
            runs.append(tok.decode(cur))
            cur = []
    if cur:
        runs.append(tok.decode(cur))
    return runs


def check_sampler_prefixes(tok, messages, ids, mask, **kw):
    """For each assistant turn: the generation prompt's tokens are exactly ids[:start of its run]."""
    starts = [k for k in range(len(mask)) if mask[k] and (k == 0 or not mask[k - 1])]
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    assert len(starts) == len(turns)
    for start, i in zip(starts, turns):
        assert encode_chat(tok, messages[:i], add_generation_prompt=True, **kw) == ids[:start]


# ---------------------------------------------------------------- Qwen3 rendering (exact strings)

def test_qwen3_generation_prompt(qwen):
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}]
    base = "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert render(qwen, msgs) == base + EMPTY_THINK  # enable_thinking=False by default
    assert render(qwen, msgs, enable_thinking=True) == base
    assert render(qwen, msgs, add_generation_prompt=False) == base[: -len("<|im_start|>assistant\n")]
    assert render(qwen, msgs[1:], enable_thinking=True) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    ids = encode_chat(qwen, msgs)
    assert ids[:3] == [151644, 8948, 198]  # <|im_start|> system \n
    assert ids[-4:] == [151667, 271, 151668, 271]  # <think> \n\n </think> \n\n


def test_qwen3_tools_and_tool_turns(qwen):
    text = render(qwen, TOOL_CONVERSATION, add_generation_prompt=False, tools=[WEATHER_TOOL])
    expected = (
        "<|im_start|>system\nYou are helpful.\n\n# Tools\n\nYou may call one or more functions to assist with the "
        "user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        '{"type": "function", "function": {"name": "get_weather", "description": "Get weather", "parameters": '
        '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n</tools>\n\n'
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\nHi<|im_end|>\n"
        f"<|im_start|>assistant\n{EMPTY_THINK}Hello! How can I help?<|im_end|>\n"
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
        f"<|im_start|>assistant\n{EMPTY_THINK}{TOOL_CALL_TEXT}<|im_end|>\n"
        '<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response>\n<tool_response>\nsunny\n'
        "</tool_response><|im_end|>\n"
        f"<|im_start|>assistant\n{EMPTY_THINK}It is 21°C and sunny.<|im_end|>\n"
    )
    assert text == expected
    # Tools without a system message: a system turn holding only the tool block.
    alone = render(qwen, [{"role": "user", "content": "x"}], tools=[WEATHER_TOOL])
    assert alone.startswith("<|im_start|>system\n# Tools\n\n") and alone.count("<|im_start|>system") == 1


def test_qwen3_tool_call_variants_and_reasoning(qwen):
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "Let me check.", "reasoning_content": "\nneed data\n",
             "tool_calls": [{"name": "f", "arguments": '{"a": 1}'}, {"name": "g", "arguments": {"b": "é"}}]}]
    text = render(qwen, msgs, add_generation_prompt=False)
    assert text.endswith(
        "<|im_start|>assistant\n<think>\nneed data\n</think>\n\nLet me check.\n"
        '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
        '<tool_call>\n{"name": "g", "arguments": {"b": "é"}}\n</tool_call><|im_end|>\n')


# ---------------------------------------------------------------- masks

def test_mask_hand_computed_single_turn(qwen):
    ids, mask = render_with_masks(qwen, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
    # <|im_start|> user \n Hi <|im_end|> \n <|im_start|> assistant \n <think> \n\n </think> \n\n Hello <|im_end|> \n
    assert ids == [151644, 872, 198, 13048, 151645, 198,
                   151644, 77091, 198, 151667, 271, 151668, 271, 9707, 151645, 198]
    assert mask == [0] * 13 + [1, 1, 0]


def test_mask_multi_turn_with_tools_qwen3(qwen):
    kw = dict(tools=[WEATHER_TOOL])
    ids, mask = render_with_masks(qwen, TOOL_CONVERSATION, **kw)
    assert len(ids) == len(mask) and set(mask) == {0, 1}
    assert ids == encode_chat(qwen, TOOL_CONVERSATION, add_generation_prompt=False, **kw)
    assert mask_runs(qwen, ids, mask) == [
        "Hello! How can I help?<|im_end|>", TOOL_CALL_TEXT + "<|im_end|>", "It is 21°C and sunny.<|im_end|>"]
    expected_ones = sum(len(qwen.encode(t, add_special_tokens=False)) for t in
                        ["Hello! How can I help?<|im_end|>", TOOL_CALL_TEXT + "<|im_end|>",
                         "It is 21°C and sunny.<|im_end|>"])
    # 8 (Hello ! How can I help ? <|im_end|>) + 20 (tool call) + 10 (It is ' ' 2 1 °C and sunny . <|im_end|>)
    assert sum(mask) == expected_ones == 38
    context = qwen.decode([i for i, m in zip(ids, mask) if not m])
    for m in TOOL_CONVERSATION:
        if m["role"] != "assistant":
            assert m["content"] in context
    assert qwen.decode([i for i, m in zip(ids, mask) if not m]).count("<|im_end|>") == 4  # system, 2 user, 1 tool turn
    check_sampler_prefixes(qwen, TOOL_CONVERSATION, ids, mask, **kw)
    # Generation prompt appended at the end is context.
    ids2, mask2 = render_with_masks(qwen, TOOL_CONVERSATION[:4], add_generation_prompt=True, **kw)
    assert ids2 == encode_chat(qwen, TOOL_CONVERSATION[:4], **kw) and mask2[-8:] == [0] * 8


def test_mask_thinking_mode(qwen):
    msgs = [{"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
            {"role": "user", "content": "3+3?"},
            {"role": "assistant", "content": "6", "reasoning_content": "again"}]
    ids, mask = render_with_masks(qwen, msgs, enable_thinking=True)
    # The model wrote the think blocks itself: they are in the mask; the headers are not.
    assert mask_runs(qwen, ids, mask) == ["<think>\nadd them\n</think>\n\n4<|im_end|>",
                                          "<think>\nagain\n</think>\n\n6<|im_end|>"]
    check_sampler_prefixes(qwen, msgs, ids, mask, enable_thinking=True)
    # enable_thinking=False: same reasoning messages keep their (model-written) think blocks in the mask.
    ids, mask = render_with_masks(qwen, msgs, enable_thinking=False)
    assert mask_runs(qwen, ids, mask) == ["<think>\nadd them\n</think>\n\n4<|im_end|>",
                                          "<think>\nagain\n</think>\n\n6<|im_end|>"]


def test_mask_boundary_never_straddled(qwen):
    # Content starting with "\n" right after the template's "</think>\n\n": one BPE token "\n\n\n" would
    # cross the boundary in a whole-text tokenization; segment-wise tokenization keeps the sampler's view.
    msgs = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "\nHi"}]
    ids, mask = render_with_masks(qwen, msgs)
    assert mask_runs(qwen, ids, mask) == ["\nHi<|im_end|>"]
    check_sampler_prefixes(qwen, msgs, ids, mask)
    assert ids != encode_chat(qwen, msgs, add_generation_prompt=False)  # the documented difference
    assert qwen.decode(ids) == render(qwen, msgs, add_generation_prompt=False)


def test_first_message_assistant(qwen):
    ids, mask = render_with_masks(qwen, [{"role": "assistant", "content": "x"}])
    assert ids == [151644, 77091, 198, 151667, 271, 151668, 271, 87, 151645, 198]
    assert mask == [0] * 7 + [1, 1, 0]


def test_mask_multi_turn_smollm2(smol):
    msgs = [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."},
            {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "It is 6, of course."}]
    text, spans = assistant_spans(smol, msgs)
    assert [text[a:b] for a, b in spans] == ["4.<|im_end|>", "It is 6, of course.<|im_end|>"]
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    ids, mask = render_with_masks(smol, msgs)
    assert ids == encode_chat(smol, msgs, add_generation_prompt=False)
    assert mask_runs(smol, ids, mask) == ["4.<|im_end|>", "It is 6, of course.<|im_end|>"]
    assert sum(mask) == 3 + 9  # "4", ".", <|im_end|>; "It"," is"," ","6",","," of"," course",".",<|im_end|>
    check_sampler_prefixes(smol, msgs, ids, mask)
    assert [ids[k] for k in range(len(ids)) if mask[k] and (k + 1 == len(ids) or not mask[k + 1])] == [2, 2]


# ---------------------------------------------------------------- errors

def test_not_prefix_stable_template_is_refused(qwen):
    # Like the official Qwen3 template, this one rewrites earlier assistant turns.
    rewriting = ("{% for m in messages %}{% if m.role == 'assistant' and not loop.last %}"
                 "<|im_start|>assistant\n<|im_end|>\n{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                 "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    saved = qwen.chat_template
    try:
        qwen.chat_template = rewriting
        msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]
        with pytest.raises(ValueError, match="prefix-stable"):
            render_with_masks(qwen, msgs)
        qwen.chat_template = None
        with pytest.raises(ValueError, match="chat_template"):
            render(qwen, msgs)
    finally:
        qwen.chat_template = saved


def test_bad_messages(qwen, smol):
    with pytest.raises(ValueError, match="role"):
        render(qwen, [{"role": "robot", "content": "x"}])
    with pytest.raises(TypeError, match="content"):
        render(qwen, [{"role": "user", "content": ["x"]}])
    with pytest.raises(TypeError, match="list of dicts"):
        render(qwen, "hello")
    with pytest.raises(ValueError, match="tool_calls"):
        render(smol, [{"role": "assistant", "content": "", "tool_calls": [{"name": "f", "arguments": {}}]}])
