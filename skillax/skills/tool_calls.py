"""SkillOS curator tool calls: Qwen3 `<tool_call>` blocks -> validated repo operations.

Format (Qwen3 / Hermes): one or more blocks in the assistant text,

    <tool_call>
    {"name": "insert_skill", "arguments": {"name": "...", "description": "...", "body": "..."}}
    </tool_call>

Functions (DESIGN.md §1.2): `insert_skill(name, description, body)`,
`update_skill(name, description?, body?)` (only given fields change; at least one),
`delete_skill(name)`. `TOOL_SCHEMAS` is the OpenAI/Qwen function list for the chat template.

Counting (for r_fc, the share of calls that parsed and applied):
* Text before the last `</think>` is reasoning and is ignored.
* Every `<tool_call>...</tool_call>` block is one call. An opening tag that is never closed
  (before the end or the next opening tag) and a closing tag with no opening tag each count as one
  malformed call. `total` = all of these; `applied` = calls that parsed, validated and changed
  the repo without error.
* At most `max_calls` (default 64) blocks are read per output; if more follow, ONE extra call
  with the error "too many tool calls ..." is counted in their place (so a flood of calls cannot
  flood the changelog, and still lowers r_fc).
* `r_fc = applied / total`; with **zero calls** `r_fc = empty_value`, **0.0 by default**: a curator
  that emits nothing earns no format credit (otherwise silence would be the safest policy).
* An insert/update refused by the repo's token budget (`SkillRepo(token_budget=...)`, issue 22)
  is an invalid call like any other (not applied, lowers r_fc, the repo unchanged); its
  `CallReport.over_budget` is True so the method can count them.
"""
from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Sequence

import jsonschema

from skillax.skills.repo import SkillBudgetError, SkillRepo, SkillRepoError
from skillax.skills.skill_md import MAX_BODY_CHARS, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, NAME_PATTERN

_NAME = {"type": "string", "pattern": NAME_PATTERN, "minLength": 1, "maxLength": MAX_NAME_CHARS,
         "description": "Skill name: lowercase letters, digits and single hyphens, 1-64 chars."}
_DESC = {"type": "string", "minLength": 1, "maxLength": MAX_DESCRIPTION_CHARS,
         "description": "When to use the skill (1-1024 chars); shown to the retriever."}
_BODY = {"type": "string", "maxLength": MAX_BODY_CHARS,
         "description": "Markdown instructions of the skill."}


def _fn(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required,
                       "additionalProperties": False}}}


TOOL_SCHEMAS: list[dict] = [
    _fn("insert_skill", "Add a new skill to the repository.",
        {"name": _NAME, "description": _DESC, "body": _BODY}, ["name", "description", "body"]),
    _fn("update_skill", "Change an existing skill; only the given fields change (give at least "
        "one of description, body).", {"name": _NAME, "description": _DESC, "body": _BODY}, ["name"]),
    _fn("delete_skill", "Remove a skill from the repository.", {"name": _NAME}, ["name"]),
]
_VALIDATORS = {t["function"]["name"]: jsonschema.Draft202012Validator(t["function"]["parameters"])
               for t in TOOL_SCHEMAS}
_TAG_RE = re.compile(r"</?tool_call>")


@dataclasses.dataclass(frozen=True)
class ToolCall:
    """One parsed block; `error` is None when name and arguments are valid."""

    name: str | None
    arguments: dict | None
    raw: str
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class CallReport:
    index: int
    name: str | None
    applied: bool
    error: str | None = None
    over_budget: bool = False      # refused by the repo's token budget (`SkillBudgetError`)


@dataclasses.dataclass(frozen=True)
class ApplyReport:
    """Per-call outcomes of one curator output, in order."""

    calls: tuple[CallReport, ...]

    @property
    def n_total(self) -> int:
        return len(self.calls)

    @property
    def n_applied(self) -> int:
        return sum(c.applied for c in self.calls)

    def r_fc(self, empty_value: float = 0.0) -> float:
        """applied / total; `empty_value` (default 0.0) when there were no calls."""
        return self.n_applied / self.n_total if self.calls else float(empty_value)


def function_call_reward(reports: Sequence[ApplyReport], empty_value: float = 0.0) -> float:
    """r_fc over a whole rollout (several curator outputs): sum applied / sum total."""
    total = sum(r.n_total for r in reports)
    return sum(r.n_applied for r in reports) / total if total else float(empty_value)


def _clip(s: str, n: int = 80) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 3] + "..."


def _schema_error(err: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in err.absolute_path)
    where = f"argument '{path}'" if path else "arguments"
    v, inst = err.validator, err.instance
    if v in ("maxLength", "minLength") and isinstance(inst, str):
        return f"{where} has {len(inst)} characters ({'max' if v == 'maxLength' else 'min'} {err.validator_value})"
    if v == "pattern":
        return f"{where} {_clip(repr(inst), 60)} does not match {err.validator_value}"
    if v == "type":
        return f"{where} must be of type {err.validator_value}, got {type(inst).__name__}"
    if v == "additionalProperties":
        extra = sorted(set(inst) - set(err.schema.get("properties", {})))
        return f"unknown argument(s) {[_clip(str(k), 30) for k in extra][:5]}"
    return _clip(f"{where}: {err.message}", 200)


def validate_call(name: Any, arguments: Any) -> str | None:
    """None if `name(arguments)` is a valid call per `TOOL_SCHEMAS`, else the reason."""
    if not isinstance(name, str) or name not in _VALIDATORS:
        return f"unknown function {_clip(repr(name), 60)} (expected one of {sorted(_VALIDATORS)})"
    if not isinstance(arguments, dict):
        return f"arguments must be an object, got {type(arguments).__name__}"
    errors = sorted(_VALIDATORS[name].iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if errors:
        return _schema_error(jsonschema.exceptions.best_match(errors))
    if name == "update_skill" and "description" not in arguments and "body" not in arguments:
        return "update_skill needs at least one of description, body"
    return None


def _parse_block(raw: str) -> ToolCall:
    content = raw.strip()
    if not content:
        return ToolCall(None, None, raw, "empty <tool_call> block")
    try:
        obj = json.loads(content)
    except json.JSONDecodeError as e:
        return ToolCall(None, None, raw, f"invalid JSON: {e.msg} at char {e.pos}")
    except RecursionError:
        return ToolCall(None, None, raw, "invalid JSON: nested too deeply")
    if not isinstance(obj, dict):
        return ToolCall(None, None, raw, f"tool call must be a JSON object, got {type(obj).__name__}")
    extra = sorted(set(obj) - {"name", "arguments"})
    if extra:
        return ToolCall(None, None, raw, f"unknown keys {[_clip(k, 30) for k in extra][:5]} "
                                         "(expected name, arguments)")
    name, args = obj.get("name"), obj.get("arguments", {})
    if isinstance(args, str):  # OpenAI style: arguments as a JSON string
        try:
            args = json.loads(args)
        except (json.JSONDecodeError, RecursionError):
            return ToolCall(name if isinstance(name, str) else None, None, raw,
                            "arguments string is not valid JSON")
    err = validate_call(name, args)
    return ToolCall(name if isinstance(name, str) else None, args if isinstance(args, dict) else None,
                    raw, err)


MAX_CALLS = 64


def parse_tool_calls(text: str, max_calls: int = MAX_CALLS) -> list[ToolCall]:
    """Tool calls in an assistant output, in order (malformed ones carry `error`). Never raises.

    At most `max_calls` are returned, plus one error entry standing for all calls beyond that.
    """
    if not isinstance(text, str):
        return [ToolCall(None, None, "", f"output must be a string, got {type(text).__name__}")]
    cut = text.rfind("</think>")
    if cut >= 0:
        text = text[cut + len("</think>"):]
    calls: list[ToolCall] = []
    start = None
    for m in _TAG_RE.finditer(text):
        if len(calls) >= max_calls:
            calls.append(ToolCall(None, None, "", f"too many tool calls: only the first {max_calls} "
                                                  "are read; the rest are ignored"))
            return calls
        if m.group() == "<tool_call>":
            if start is not None:
                calls.append(ToolCall(None, None, text[start:m.start()],
                                      "unclosed <tool_call> (a new <tool_call> began)"))
            start = m.end()
        elif start is None:
            calls.append(ToolCall(None, None, "", "</tool_call> without an opening <tool_call>"))
        else:
            calls.append(_parse_block(text[start:m.start()]))
            start = None
    if start is not None and len(calls) < max_calls:
        calls.append(ToolCall(None, None, text[start:], "unclosed <tool_call> at end of output"))
    elif start is not None:
        calls.append(ToolCall(None, None, "", f"too many tool calls: only the first {max_calls} "
                                              "are read; the rest are ignored"))
    return calls


def apply_tool_calls(repo: SkillRepo, output: str | Sequence[ToolCall], *,
                     step: int | None = None, max_calls: int = MAX_CALLS) -> ApplyReport:
    """Parse (if given text) and apply calls to `repo` in order; each invalid call is logged in
    the repo changelog with its error and skipped. Returns per-call reports. Never raises for bad
    model output (disk errors propagate)."""
    calls = parse_tool_calls(output, max_calls) if isinstance(output, str) else list(output)
    reports = []
    for i, call in enumerate(calls):
        if call.error is None:  # re-check calls built by hand
            call = dataclasses.replace(call, error=validate_call(call.name, call.arguments))
        if call.error is not None:
            repo.log("tool_call", {"name": call.name, "raw": _clip(call.raw, 2000)}, False,
                     call.error, step)
            reports.append(CallReport(i, call.name, False, call.error))
            continue
        a = call.arguments
        try:
            if call.name == "insert_skill":
                repo.insert(a["name"], a["description"], a["body"], step=step)
            elif call.name == "update_skill":
                repo.update(a["name"], description=a.get("description"), body=a.get("body"), step=step)
            else:
                repo.delete(a["name"], step=step)
            reports.append(CallReport(i, call.name, True, None))
        except SkillRepoError as e:
            reports.append(CallReport(i, call.name, False, e.reason, isinstance(e, SkillBudgetError)))
    return ApplyReport(tuple(reports))
