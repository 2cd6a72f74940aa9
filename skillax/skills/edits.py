"""Skill-alpha edit actions: parse the policy's output and apply one local edit to a rule skill.

Policy output format (DESIGN.md §1.1; our decision since the paper's syntax is not public):

    <think>short reasoning</think>
    {"action": "UPDATE", "target": ["R3"], "content": "new text of rule R3"}

Parsing (`parse_edit`):
* `<think>...</think>` is optional. If `</think>` occurs, the JSON is read after the *last*
  `</think>` (a prompt that pre-fills `<think>` yields output with only the closing tag). An
  opening `<think>` without a later `</think>` is invalid ("unclosed <think>").
* After it: exactly one JSON object, optionally inside one ```json fence; nothing else but
  whitespace. Keys: `action` (required; case-insensitive CREATE|UPDATE|MERGE|PRUNE|NOOP),
  `target` (list of rule ids `"R3"`; `[R3]`/`r3` accepted; missing or null = []), `content`
  (string; missing or null = none). Any other key is invalid.

Semantics (`apply_edit`, on the skill's rule body, see `skillax.skills.rules`):
* CREATE  target = [], content required: append a new rule with id `next_id` at the end.
* UPDATE  exactly one existing target, content required: replace that rule's text in place;
          its id is kept.
* MERGE   >= 2 distinct existing targets, content required: remove the targets and insert ONE
          new rule with a fresh id (`next_id`) at the position that `target[0]` (first *listed*
          target) had. The merged ids are retired, never reused.
* PRUNE   >= 1 distinct existing targets, no content (null/""/absent): remove them.
* NOOP    no target, no content: the skill is returned unchanged (same object).
Content is normalised with `normalise_rule_text` (a copied `- [R4]` prefix is dropped) and must be
non-empty, at most `max_rule_chars` (default 2000) characters, free of control characters.
Anything else -> `EditResult(valid=False, reason=..., skill=<the input skill, unchanged>)`.
"""
from __future__ import annotations

import dataclasses
import json
import re

from skillax.skills.rules import (
    Rule, RuleBody, normalise_rule_text, parse_rule_id, rules_of, with_rules,
)
from skillax.skills.skill_md import SkillDoc, SkillFormatError, check_text, validate_doc

ACTIONS = ("CREATE", "UPDATE", "MERGE", "PRUNE", "NOOP")
MAX_RULE_CHARS = 2000
_KEYS = {"action", "target", "content"}
_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```$", re.S)


@dataclasses.dataclass(frozen=True)
class EditAction:
    """A parsed edit. `target` holds canonical labels ('R3'); `content` None when absent."""

    action: str
    target: tuple[str, ...] = ()
    content: str | None = None
    think: str | None = None


@dataclasses.dataclass(frozen=True)
class EditParse:
    action: EditAction | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.action is not None


@dataclasses.dataclass(frozen=True)
class EditResult:
    """Outcome of an edit. When `valid` is False, `skill` is the input skill and `reason` says why."""

    valid: bool
    reason: str | None
    skill: SkillDoc
    action: EditAction | None = None

    @property
    def kind(self) -> str | None:
        return self.action.action if self.action else None


def _clip(s: str, n: int = 80) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 3] + "..."


def parse_edit(text: str) -> EditParse:
    """Policy output -> EditParse(action) or EditParse(None, reason). Never raises."""
    if not isinstance(text, str):
        return EditParse(None, f"output must be a string, got {type(text).__name__}")
    think = None
    close = text.rfind("</think>")
    if close >= 0:
        open_ = text.find("<think>")
        if 0 <= open_ < close:
            think = text[open_ + len("<think>"):close].strip()
        else:
            think = text[:close].strip()
        rest = text[close + len("</think>"):]
        if "<think>" in rest:
            return EditParse(None, "unclosed <think> after the last </think>")
    elif "<think>" in text:
        return EditParse(None, "unclosed <think> block (no </think>)")
    else:
        rest = text
    rest = rest.strip()
    m = _FENCE_RE.match(rest)
    if m:
        rest = m.group(1).strip()
    if not rest:
        return EditParse(None, "no JSON object in the output")
    if not rest.startswith("{"):
        return EditParse(None, f"expected one JSON object, found {_clip(rest)!r}")
    try:
        obj, end = json.JSONDecoder().raw_decode(rest)
    except json.JSONDecodeError as e:
        return EditParse(None, f"invalid JSON: {e.msg} at char {e.pos}")
    except RecursionError:
        return EditParse(None, "invalid JSON: nested too deeply")
    if rest[end:].strip():
        return EditParse(None, f"unexpected text after the JSON object: {_clip(rest[end:].strip())!r}")
    if not isinstance(obj, dict):
        return EditParse(None, f"JSON must be an object, got {type(obj).__name__}")
    extra = sorted(set(obj) - _KEYS)
    if extra:
        return EditParse(None, f"unknown keys {[_clip(k, 30) for k in extra][:5]} "
                               "(allowed: action, target, content)")
    act = obj.get("action")
    if not isinstance(act, str) or act.strip().upper() not in ACTIONS:
        return EditParse(None, f"action must be one of {'|'.join(ACTIONS)}, got {_clip(repr(act), 40)}")
    act = act.strip().upper()
    target = obj.get("target")
    if target is None:
        target = []
    if not isinstance(target, list):
        return EditParse(None, f"target must be a list of rule ids, got {type(target).__name__}")
    labels = []
    for t in target:
        rid = parse_rule_id(t)
        if rid is None:
            return EditParse(None, f"target {_clip(repr(t), 40)} is not a rule id like 'R3'")
        labels.append(f"R{rid}")
    content = obj.get("content")
    if content is not None and not isinstance(content, str):
        return EditParse(None, f"content must be a string, got {type(content).__name__}")
    return EditParse(EditAction(act, tuple(labels), content, think))


def _has_content(action: EditAction) -> bool:
    c = action.content
    return c is not None and (not isinstance(c, str) or bool(c.strip()))


def _invalid(skill: SkillDoc, action: EditAction | None, reason: str) -> EditResult:
    return EditResult(False, reason, skill, action)


def _content(action: EditAction, max_chars: int) -> str:
    """Normalised non-empty content, else raises SkillFormatError."""
    if not isinstance(action.content, str) or not action.content.strip():
        raise SkillFormatError(f"{action.action} needs non-empty content")
    text = normalise_rule_text(action.content)
    if not text:
        raise SkillFormatError(f"{action.action} content is empty after removing the rule tag")
    check_text(text, "content", max_chars=max_chars, allow_empty=False)
    return text


def _targets(action: EditAction, rb: RuleBody) -> list[int]:
    ids = [parse_rule_id(t) for t in action.target]
    if any(i is None for i in ids):
        raise SkillFormatError("target is not a rule id like 'R3'")
    seen = set()
    for i in ids:
        if i in seen:
            raise SkillFormatError(f"duplicate target R{i}")
        seen.add(i)
        if rb.index(i) < 0:
            have = ", ".join(r.label for r in rb.rules) or "none"
            raise SkillFormatError(f"target R{i} does not exist (rules: {_clip(have, 120)})")
    return ids


def apply_edit(skill: SkillDoc, action: EditAction, *, max_rule_chars: int = MAX_RULE_CHARS) -> EditResult:
    """Apply one edit (semantics in the module docstring). Never raises; invalid -> unchanged skill."""
    if not isinstance(action, EditAction) or action.action not in ACTIONS:
        return _invalid(skill, None, f"not an edit action: {_clip(repr(action), 60)}")
    rb = rules_of(skill)
    kind = action.action
    try:
        if kind == "NOOP":
            if action.target:
                raise SkillFormatError("NOOP takes no target")
            if _has_content(action):
                raise SkillFormatError("NOOP takes no content")
            return EditResult(True, None, skill, action)
        if kind == "CREATE":
            if action.target:
                raise SkillFormatError("CREATE takes no target")
            text = _content(action, max_rule_chars)
            new = RuleBody(rb.rules + (Rule(rb.next_id, text),), rb.next_id + 1, rb.preamble)
        elif kind == "UPDATE":
            if len(action.target) != 1:
                raise SkillFormatError(f"UPDATE needs exactly one target, got {len(action.target)}")
            (tid,) = _targets(action, rb)
            text = _content(action, max_rule_chars)
            rules = tuple(Rule(r.id, text) if r.id == tid else r for r in rb.rules)
            new = RuleBody(rules, rb.next_id, rb.preamble)
        elif kind == "MERGE":
            if len(action.target) < 2:
                raise SkillFormatError(f"MERGE needs at least two targets, got {len(action.target)}")
            ids = _targets(action, rb)
            text = _content(action, max_rule_chars)
            gone = set(ids)
            rules = []
            for r in rb.rules:
                if r.id == ids[0]:
                    rules.append(Rule(rb.next_id, text))
                elif r.id not in gone:
                    rules.append(r)
            new = RuleBody(tuple(rules), rb.next_id + 1, rb.preamble)
        else:  # PRUNE
            if not action.target:
                raise SkillFormatError("PRUNE needs at least one target")
            if _has_content(action):
                raise SkillFormatError("PRUNE takes no content")
            gone = set(_targets(action, rb))
            new = RuleBody(tuple(r for r in rb.rules if r.id not in gone), rb.next_id, rb.preamble)
        out = validate_doc(with_rules(skill, new))
    except SkillFormatError as e:
        return _invalid(skill, action, e.reason)
    return EditResult(True, None, out, action)


def edit_skill(skill: SkillDoc, output: str, *, max_rule_chars: int = MAX_RULE_CHARS) -> EditResult:
    """parse_edit + apply_edit. Never raises."""
    p = parse_edit(output)
    if p.action is None:
        return _invalid(skill, None, p.reason or "unparseable output")
    return apply_edit(skill, p.action, max_rule_chars=max_rule_chars)
