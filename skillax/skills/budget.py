"""Token budgets of a skill store (issue 22 item 7): counting, and the "over budget" rule.

One optional budget per method, each enforced by the method's own mechanism (the budget keys:
Skill1 ``library.token_budget``, SkillOS ``rollout.repo_token_budget``, Skill-alpha
``skill.token_budget``; 0 = off = the paper's behaviour, the default):

* Skill1 (``skills.library.SkillLibrary``): after an admission, records are evicted by the
  eviction score until the library is within budget;
* SkillOS (``skills.repo.SkillRepo``): an insert/update tool call that would push the repo over
  budget fails as an invalid call (``SkillBudgetError``; counted in r_fc, the repo unchanged);
* Skill-alpha (``methods.skill_alpha.action_space.restrict_budget``): an edit that would push
  z over budget is invalid (z unchanged).

Counting (:func:`token_counter`): with the method's policy tokenizer, ``len(tokenizer.encode(
text, add_special_tokens=False))``; without one (a store used outside a run, e.g. tests or
``mode=library``), the fallback ``ceil(len(text) / 4)`` (:data:`FALLBACK_CHARS_PER_TOKEN`:
the usual ~4 characters per BPE token of English text; measured with the SmolLM2 tokenizer:
4.1 chars/token on a Skill1 play-prompt skill text, 3.6 on the SKILL.md files of
``../shared/data/skills_corpus``, so the fallback undercounts those by ~10 %). The text counted is what the method's reader sees (each method
names it: Skill1 the play-prompt skill text, SkillOS the SKILL.md file, Skill-alpha the worker's
rendered rule body).
"""
from __future__ import annotations

import math
from typing import Callable

FALLBACK_CHARS_PER_TOKEN = 4
BUDGET_REASON = "over the token budget"     # every budget rejection's reason starts with this


def fallback_count(text: str) -> int:
    """ceil(len(text) / 4) characters -> tokens (module docstring); 0 for ""."""
    return math.ceil(len(text) / FALLBACK_CHARS_PER_TOKEN)


def token_counter(tokenizer=None) -> Callable[[str], int]:
    """text -> number of tokens: the tokenizer's count without special tokens, or
    :func:`fallback_count` when ``tokenizer`` is None."""
    if tokenizer is None:
        return fallback_count
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))


def check_budget(budget: int) -> int:
    """``budget`` as an int >= 0 (0 = off); ValueError for a negative one."""
    b = int(budget)
    if b < 0:
        raise ValueError(f"token budget must be >= 0 (0 = off), got {budget!r}")
    return b


def pushes_over(before: int, after: int, budget: int) -> bool:
    """Whether a change from ``before`` to ``after`` tokens pushes a store over ``budget``:
    the budget is on (> 0), ``after`` exceeds it, and the change grows the store. A change that
    shrinks a store already over budget (e.g. seeded over it) is allowed: it moves towards it."""
    return budget > 0 and after > budget and after > before


def budget_reason(after: int, budget: int, what: str) -> str:
    """The rejection reason: 'over the token budget: <what> would hold N tokens > B'."""
    return f"{BUDGET_REASON}: {what} would hold {after} tokens > {budget}"
