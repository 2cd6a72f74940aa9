"""Rule-list skill bodies with stable ids (the object Skill-alpha edits).

Body format (rendered by `render_rules`, read by `parse_rules`):

    <optional preamble, e.g. a '# Title' line>

    - [R1] Open the fridge before looking for cold items.
    - [R3] Check the receptacle is empty before placing an object;
      continuation lines of a rule are indented by two spaces.

* A rule line is `- [R<k>] <text>` at column 0, k >= 1. Lines indented by two spaces (or any other
  non-blank line) after a rule continue that rule; blank lines between rules are ignored.
* Text before the first rule is the preamble, kept verbatim (trailing blank lines trimmed).
* Ids are never reused: `RuleBody.next_id` is a high-water mark. A deleted `R5` leaves
  `next_id >= 6` even if `R5` was the largest id. Since a plain body cannot remember a deleted
  maximum, `rules_of(doc)` / `with_rules(doc, rb)` persist it in the skill's
  `metadata["next-rule-id"]`; without it, next id = max id present + 1.
* Rule text is normalised by `normalise_rule_text`: CRLF -> LF, trailing spaces and blank lines
  dropped, a leading bullet (`- `, `* `) and a leading `[Rk]` tag removed (so a policy that copies
  the tag into `content` does not create `[R4] [R4] ...`).
* Duplicate ids in a hand-written body: the later copy gets a fresh id (and `renumbered` lists it).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from skillax.skills.skill_md import SkillDoc

NEXT_ID_KEY = "next-rule-id"
RULE_LINE_RE = re.compile(r"^- \[R([1-9][0-9]{0,8})\](?: (.*))?$")
RULE_ID_RE = re.compile(r"^\[?[Rr]([1-9][0-9]{0,8})\]?$")
_LEAD_TAG_RE = re.compile(r"^(?:[-*+][ \t]+)?(?:\[[Rr][0-9]+\][ \t]*)?")


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule: integer id (shown as 'R<id>') and its (possibly multi-line) text."""

    id: int
    text: str

    @property
    def label(self) -> str:
        return f"R{self.id}"


@dataclasses.dataclass(frozen=True)
class RuleBody:
    """Parsed rule body. `rules` in document order; `next_id` > every id ever issued."""

    rules: tuple[Rule, ...] = ()
    next_id: int = 1
    preamble: str = ""
    renumbered: tuple[int, ...] = ()

    def index(self, rule_id: int) -> int:
        """Position of `rule_id` in `rules`, or -1."""
        for i, r in enumerate(self.rules):
            if r.id == rule_id:
                return i
        return -1

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(r.id for r in self.rules)


def parse_rule_id(label: object) -> int | None:
    """'R3' / 'r3' / '[R3]' -> 3; anything else -> None."""
    if not isinstance(label, str):
        return None
    m = RULE_ID_RE.match(label.strip())
    return int(m.group(1)) if m else None


def normalise_rule_text(text: str) -> str:
    """Canonical rule text (see module docstring). May return '' (an empty rule)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [ln.rstrip() for ln in text.strip().split("\n")]
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        return ""
    lines[0] = _LEAD_TAG_RE.sub("", lines[0].lstrip(), count=1).strip()
    return "\n".join(ln for ln in lines if ln.strip()).strip()


def parse_rules(body: str, next_id: int | None = None) -> RuleBody:
    """Body text -> RuleBody. Never raises for str input.

    Args:
      body: Markdown body.
      next_id: a persisted high-water mark; the result's next_id is max(this, max id + 1).
    """
    preamble_lines: list[str] = []
    rules: list[list] = []  # [id, [lines]]
    seen: set[int] = set()
    renumbered: list[int] = []
    pending_fresh: list[int] = []  # indices of rules needing a fresh id
    for line in body.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        m = RULE_LINE_RE.match(line)
        if m:
            rid = int(m.group(1))
            if rid in seen:
                pending_fresh.append(len(rules))
            seen.add(rid)
            rules.append([rid, [m.group(2) or ""]])
        elif not rules:
            preamble_lines.append(line)
        elif line.strip():
            rules[-1][1].append(line[2:] if line.startswith("  ") else line)
    hw = max([next_id or 1] + [r[0] + 1 for r in rules])
    for i in pending_fresh:
        renumbered.append(rules[i][0])
        rules[i][0] = hw
        hw += 1
    out = tuple(Rule(rid, "\n".join(ln.rstrip() for ln in lines).strip()) for rid, lines in rules)
    preamble = "\n".join(preamble_lines).rstrip()
    return RuleBody(out, hw, preamble, tuple(renumbered))


def render_rules(rb: RuleBody) -> str:
    """RuleBody -> body text ('' for no preamble and no rules). Inverse of `parse_rules`."""
    parts = []
    if rb.preamble.strip():
        parts.append(rb.preamble.rstrip() + "\n")
        if rb.rules:
            parts.append("\n")
    for r in rb.rules:
        lines = r.text.split("\n") if r.text else [""]
        first = f"- [R{r.id}] {lines[0]}".rstrip()
        parts.append(first + "\n" + "".join(f"  {ln}\n" for ln in lines[1:]))
    return "".join(parts)


def rules_of(doc: SkillDoc) -> RuleBody:
    """Rules of a skill, honouring the persisted `metadata['next-rule-id']` high-water mark
    (an int, or the digit string an Agent Skills export writes: its metadata is string-only)."""
    hw = doc.metadata.get(NEXT_ID_KEY) if doc.metadata else None
    hw = int(hw) if isinstance(hw, str) and hw.isascii() and hw.isdigit() else hw
    hw = hw if isinstance(hw, int) and not isinstance(hw, bool) and hw > 0 else None
    return parse_rules(doc.body, hw)


def with_rules(doc: SkillDoc, rb: RuleBody) -> SkillDoc:
    """A copy of `doc` whose body is `render_rules(rb)` and metadata records `rb.next_id`."""
    meta = dict(doc.metadata or {})
    meta[NEXT_ID_KEY] = rb.next_id
    return doc.replace(body=render_rules(rb), metadata=meta)


def make_rule_body(texts: Sequence[str], preamble: str = "") -> RuleBody:
    """Rules R1..Rn from texts (normalised), e.g. to build an initial skill z0."""
    rules = tuple(Rule(i + 1, normalise_rule_text(t)) for i, t in enumerate(texts))
    return RuleBody(rules, len(rules) + 1, preamble)
