"""Chat rendering and assistant-token masks for SFT and multi-turn RL.

`QWEN3_CHAT_TEMPLATE` is skillax's own Jinja template in Qwen3's ChatML format:

* turns are ``<|im_start|>{role}\\n{content}<|im_end|>\\n``;
* tools (JSON schemas) go into the system turn under ``# Tools`` inside ``<tools></tools>``, with
  the instruction to answer ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``;
* an assistant's ``tool_calls`` render as such ``<tool_call>`` blocks after its content;
* consecutive ``tool`` messages render as one user turn of ``<tool_response>\\n...\\n</tool_response>``;
* ``enable_thinking=False`` makes the generation prompt ``<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n``
  (Qwen3's switch for non-thinking mode); ``enable_thinking=True`` leaves it at
  ``<|im_start|>assistant\\n`` and the model opens ``<think>`` itself.

One deliberate difference from the official Qwen3 template: the official one rewrites *earlier*
assistant turns (drops their reasoning, and the empty think block) once a later user turn exists.
Here every message renders the same way whatever follows it, so the rendering is *prefix-stable*:
``render(messages[:i], add_generation_prompt=True) + <what the assistant produced>`` is a prefix of
``render(messages)``. That is the property multi-turn RL needs (the trainer must see exactly the
tokens the sampler produced and was conditioned on) and what makes `render_with_masks` exact.

Masks (`render_with_masks`) are computed from characters, never from token values: for every
assistant message i, the text it produced is ``render(messages[:i+1])`` minus
``render(messages[:i], add_generation_prompt=True)``, cut after its end-of-turn token
(``tokenizer.eos_token``, ``<|im_end|>`` for Qwen3 and SmolLM2); the template's glue after it
(the ``\\n``) is context. The conversation is tokenized segment by segment at those character
boundaries, so no token straddles a boundary and every token is either wholly the assistant's or not.
"""
from __future__ import annotations

from typing import Any, Sequence

# Qwen3 ChatML with tools and thinking switch (format of Qwen/Qwen3-* tokenizer_config.json
# "chat_template"; prefix-stable variant, see module docstring).
QWEN3_CHAT_TEMPLATE = (
    "{%- set think_off = enable_thinking is defined and enable_thinking is false -%}"
    "{%- set has_system = messages | length > 0 and messages[0].role == 'system' -%}"
    "{%- if tools -%}"
    "{{- '<|im_start|>system\\n' -}}"
    "{%- if has_system and messages[0].content -%}{{- messages[0].content + '\\n\\n' -}}{%- endif -%}"
    "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n'"
    " + 'You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' -}}"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and '"
    " + 'arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n'"
    " + '{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' -}}"
    "{%- elif has_system -%}"
    "{{- '<|im_start|>system\\n' + (messages[0].content or '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- set content = message.content if message.content is string else '' -%}"
    "{%- if message.role == 'system' and loop.first -%}"
    "{%- elif message.role == 'user' or message.role == 'system' -%}"
    "{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' -}}"
    "{%- elif message.role == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if message.reasoning_content is string -%}"
    "{{- '<think>\\n' + message.reasoning_content.strip('\\n') + '\\n</think>\\n\\n' -}}"
    "{%- elif think_off and '<think>' not in content -%}"
    "{{- '<think>\\n\\n</think>\\n\\n' -}}"
    "{%- endif -%}"
    "{{- content -}}"
    "{%- if message.tool_calls -%}"
    "{%- for call in message.tool_calls -%}"
    "{%- set fn = call.function if call.function is defined and call.function else call -%}"
    "{%- if content or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
    "{{- '<tool_call>\\n{\"name\": \"' + fn.name + '\", \"arguments\": ' -}}"
    "{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}"
    "{{- '}\\n</tool_call>' -}}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- elif message.role == 'tool' -%}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}"
    "{{- '\\n<tool_response>\\n' + content + '\\n</tool_response>' -}}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- else -%}"
    "{{- raise_exception('unknown role: ' + message.role) -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if think_off -%}{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}"
    "{%- endif -%}"
)

ROLES = ("system", "user", "assistant", "tool")


def _normalise(messages: Sequence[dict[str, Any]], template: str) -> list[dict[str, Any]]:
    """Validate messages; content None -> "". Raises ValueError/TypeError with the offending index."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a list of dicts, got {type(messages).__name__}")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise TypeError(f"messages[{i}] must be a dict, got {type(m).__name__}")
        role = m.get("role")
        if role not in ROLES:
            raise ValueError(f"messages[{i}]: role must be one of {ROLES}, got {role!r}")
        content = m.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise TypeError(f"messages[{i}]: content must be a str or None, got {type(content).__name__}")
        if m.get("tool_calls") and "tool_call" not in template:
            raise ValueError(f"messages[{i}] has tool_calls but this tokenizer's chat template cannot render them")
        out.append({**m, "content": content})
    return out


def render(
    tokenizer,
    messages: Sequence[dict[str, Any]],
    add_generation_prompt: bool = True,
    enable_thinking: bool = False,
    tools: Sequence[dict[str, Any]] | None = None,
) -> str:
    """Render a conversation to text with the tokenizer's chat template.

    Args:
      tokenizer: a `PreTrainedTokenizerFast` with `chat_template` set (Qwen3: `QWEN3_CHAT_TEMPLATE`;
        SmolLM2: the template from its GGUF metadata).
      messages: [{"role": "system"|"user"|"assistant"|"tool", "content": str|None,
        optional "tool_calls": [{"name", "arguments"} or {"function": {...}}],
        optional "reasoning_content": str (assistant)}].
      add_generation_prompt: append the assistant header the model continues from.
      enable_thinking: Qwen3's switch; False puts an empty ``<think>\\n\\n</think>\\n\\n`` after the
        header. Templates that do not use it ignore it.
      tools: JSON function schemas (``{"type": "function", "function": {...}}``) shown in the system turn.
    Returns: the rendered text (special tokens spelled out; tokenize with add_special_tokens=False).
    Raises: ValueError / TypeError on malformed messages, when the tokenizer has no chat template,
      or when tools / tool calls are given to a template that cannot render them.
    """
    template = getattr(tokenizer, "chat_template", None)
    if not template or not isinstance(template, str):
        raise ValueError("tokenizer has no (single) chat_template; set tokenizer.chat_template first")
    msgs = _normalise(messages, template)
    if tools and "tools" not in template:
        raise ValueError("tools were given but this tokenizer's chat template does not render tools")
    text = tokenizer.apply_chat_template(
        msgs,
        tools=list(tools) if tools else None,
        add_generation_prompt=add_generation_prompt,
        enable_thinking=enable_thinking,
        tokenize=False,
    )
    if not isinstance(text, str):  # pragma: no cover - transformers API drift
        raise TypeError(f"apply_chat_template returned {type(text).__name__}, expected str")
    return text


def encode_chat(
    tokenizer,
    messages: Sequence[dict[str, Any]],
    add_generation_prompt: bool = True,
    enable_thinking: bool = False,
    tools: Sequence[dict[str, Any]] | None = None,
) -> list[int]:
    """Token ids of `render(...)` (no extra BOS/EOS: the template writes every special token).

    Returns: list[int] of length T. Raises: as `render`.
    """
    text = render(tokenizer, messages, add_generation_prompt, enable_thinking, tools)
    return list(tokenizer.encode(text, add_special_tokens=False))


_SENTINEL = "\x00skillax-assistant-start\x00"


def _generation_prompt(tokenizer, prefix, enable_thinking, tools) -> str:
    """render(prefix, add_generation_prompt=True); for an empty prefix (transformers refuses to render
    an empty conversation) the text a lone assistant message's template output has before its content."""
    if prefix:
        return render(tokenizer, prefix, True, enable_thinking, tools)
    text = render(tokenizer, [{"role": "assistant", "content": _SENTINEL}], False, enable_thinking, tools)
    return text[: text.index(_SENTINEL)]


def assistant_spans(
    tokenizer,
    messages: Sequence[dict[str, Any]],
    add_generation_prompt: bool = False,
    enable_thinking: bool = False,
    tools: Sequence[dict[str, Any]] | None = None,
) -> tuple[str, list[tuple[int, int]]]:
    """The rendered conversation and the character spans [start, end) the assistant produced.

    A span covers an assistant message's generated text: its think block when the model wrote it,
    its content, its tool calls and its end-of-turn token (`tokenizer.eos_token`, included when
    present in the message's rendering; otherwise the span runs to the end of that rendering).
    The role header, an empty think block written by the generation prompt, and the template's
    glue after the end-of-turn token are context.

    Raises: ValueError when the template is not prefix-stable for these messages (an earlier
      rendering is not a prefix of a later one, e.g. the official Qwen3 template that rewrites
      past assistant turns); use `QWEN3_CHAT_TEMPLATE` then.
    """
    kw = dict(tools=tools)
    full = render(tokenizer, messages, add_generation_prompt, enable_thinking, **kw)
    eos = tokenizer.eos_token or ""
    spans: list[tuple[int, int]] = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        upto = render(tokenizer, messages[: i + 1], False, enable_thinking, **kw)
        if not full.startswith(upto):
            raise ValueError(
                f"chat template is not prefix-stable: rendering of messages[:{i + 1}] is not a prefix of the "
                "whole conversation (does it rewrite earlier turns?); use skillax.tokenizers.chat.QWEN3_CHAT_TEMPLATE"
            )
        # The generation prompt the sampler would have used; if the message does not continue it
        # (e.g. it carries its own reasoning while enable_thinking=False), the bare header.
        start = None
        for thinking in dict.fromkeys((enable_thinking, True)):
            prompt = _generation_prompt(tokenizer, messages[:i], thinking, tools)
            if upto.startswith(prompt):
                start = len(prompt)
                break
        if start is None:
            raise ValueError(f"messages[{i}]: its rendering does not extend the generation prompt of messages[:{i}]")
        produced = upto[start:]
        cut = produced.rfind(eos) if eos else -1
        end = start + (cut + len(eos) if cut >= 0 else len(produced))
        if spans and start < spans[-1][1]:
            raise ValueError(f"messages[{i}]: overlapping assistant spans")
        spans.append((start, end))
    return full, spans


def render_with_masks(
    tokenizer,
    messages: Sequence[dict[str, Any]],
    add_generation_prompt: bool = False,
    enable_thinking: bool = False,
    tools: Sequence[dict[str, Any]] | None = None,
) -> tuple[list[int], list[int]]:
    """Token ids of a conversation and a mask that is 1 exactly on the assistant's own tokens.

    Args: as `render`; `add_generation_prompt` defaults to False (a finished transcript for SFT).
    Returns:
      ids: list[int], length T, the conversation tokenized segment by segment at the assistant
        span boundaries of `assistant_spans` (equal to `encode_chat` whenever no BPE token would
        cross a boundary -- the usual case, pinned in tests).
      assistant_mask: list[int] in {0, 1}, length T; 1 on tokens of assistant-produced text
        (content, tool calls, model-written think block, end-of-turn token), 0 on system, user,
        tool-response text, role headers, template-written empty think blocks and glue.
    Raises: as `assistant_spans`.
    """
    full, spans = assistant_spans(tokenizer, messages, add_generation_prompt, enable_thinking, tools)
    ids: list[int] = []
    mask: list[int] = []
    cursor = 0
    for start, end in spans:
        for text, flag in ((full[cursor:start], 0), (full[start:end], 1)):
            if text:
                piece = tokenizer.encode(text, add_special_tokens=False)
                ids.extend(piece)
                mask.extend([flag] * len(piece))
        cursor = end
    if cursor < len(full):
        piece = tokenizer.encode(full[cursor:], add_special_tokens=False)
        ids.extend(piece)
        mask.extend([0] * len(piece))
    return ids, mask
