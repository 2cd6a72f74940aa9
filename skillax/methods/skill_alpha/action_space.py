"""The editor's action space (``config.unit.actions``): all five actions at paper settings, a
subset for the paper's action ablations (Skill-alpha paper, Table 4/5):

* ``"CREATE,UPDATE,MERGE,PRUNE,NOOP"`` -- the full method (default);
* ``"CREATE,UPDATE,NOOP"``            -- "w/o MERGE/PRUNE" (paper: tau2 55.83 -> 39.17);
* ``"CREATE,UPDATE,MERGE,PRUNE"``     -- "w/o NOOP".

A removed action is out of the action space everywhere: the editor prompt does not offer it
(:func:`skillax.methods.skill_alpha.prompts.editor_system`), the SFT rule teacher never
writes it, and an output that uses it anyway is invalid (:func:`restrict_edit`): reward 0 (the
binary floor; -1 graded), skill unchanged, no worker call -- so a removed NOOP is never
rewarded by the rollback rule's NOOP clause either.

Skill budget (issue 22 item 7; ``skill.token_budget``, 0 = off = the paper): an edit whose
result z_t would push the skill over the budget (``skills.budget.pushes_over`` on the tokens
of what the worker reads, ``prompts.skill_context``) is invalid in the same way
(:func:`restrict_budget`): z unchanged, reason "over the token budget: ...", no worker call.
"""
from __future__ import annotations

from typing import Callable, Sequence

from skillax.methods.skill_alpha.prompts import skill_context
from skillax.skills import budget as budget_lib
from skillax.skills.edits import ACTIONS, MAX_RULE_CHARS, EditResult, edit_skill
from skillax.skills.skill_md import SkillDoc

EDITING = ("CREATE", "UPDATE", "MERGE", "PRUNE")


def parse_actions(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """Allowed actions, in :data:`ACTIONS` order, from a tuple or "A,B,C" (case-insensitive);
    empty / None = all five. Raises ValueError for an unknown action or a space without any
    editing action (NOOP alone)."""
    if spec is None or (isinstance(spec, str) and not spec.strip()) or (not isinstance(spec, str) and not len(spec)):
        return ACTIONS
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    got = {str(a).strip().upper() for a in items if str(a).strip()}
    bad = sorted(got - set(ACTIONS))
    if bad:
        raise ValueError(f"unit.actions: unknown action(s) {bad}; allowed {ACTIONS}")
    if not got & set(EDITING):
        raise ValueError(f"unit.actions needs at least one of {EDITING}, got {sorted(got)}")
    return tuple(a for a in ACTIONS if a in got)


def restrict_edit(before: SkillDoc, res: EditResult, allowed: Sequence[str]) -> EditResult:
    """``res`` unchanged when its action is allowed (or it is already invalid); otherwise an
    invalid result holding ``before`` (the skill the edit started from) and the reason
    "action X is not in unit.actions ..."."""
    if not res.valid or res.kind in allowed:
        return res
    return EditResult(False, f"action {res.kind} is not in unit.actions {','.join(allowed)}", before, res.action)


def skill_tokens(skill: SkillDoc, count_tokens: Callable[[str], int] | None = None) -> int:
    """Tokens of what the worker reads of ``skill`` (``prompts.skill_context``), counted with
    ``count_tokens`` (``skills.budget.token_counter``; None = its fallback)."""
    return int((count_tokens or budget_lib.fallback_count)(skill_context(skill)))


def restrict_budget(before: SkillDoc, res: EditResult, token_budget: int,
                    count_tokens: Callable[[str], int] | None = None) -> EditResult:
    """``res`` unchanged when the budget is off, ``res`` is already invalid, or its skill does
    not push ``before`` over ``token_budget`` (``skills.budget.pushes_over``); otherwise an
    invalid result holding ``before`` and the reason "over the token budget: ..."."""
    if not token_budget or not res.valid or res.skill is before:
        return res
    old, new = skill_tokens(before, count_tokens), skill_tokens(res.skill, count_tokens)
    if not budget_lib.pushes_over(old, new, int(token_budget)):
        return res
    return EditResult(False, budget_lib.budget_reason(new, int(token_budget), "the skill"), before, res.action)


def is_budget_rejection(res: EditResult) -> bool:
    """Whether ``res`` was made invalid by :func:`restrict_budget`."""
    return not res.valid and (res.reason or "").startswith(budget_lib.BUDGET_REASON)


def edit_in_space(before: SkillDoc, output: str, allowed: Sequence[str] = ACTIONS, *,
                  max_rule_chars: int = MAX_RULE_CHARS, token_budget: int = 0,
                  count_tokens: Callable[[str], int] | None = None) -> EditResult:
    """Parse and apply one editor output to ``before`` within the action space ``allowed``
    and the skill's ``token_budget`` (0 = off; :func:`restrict_budget`)."""
    res = restrict_edit(before, edit_skill(before, output, max_rule_chars=max_rule_chars), allowed)
    return restrict_budget(before, res, token_budget, count_tokens)
