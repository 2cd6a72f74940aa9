"""Token budgets of the skill stores (issue 22 item 7) on hand-computed sizes: the counting
fallback, Skill1's budget eviction order, SkillOS's over-budget tool calls, and that every
refused change leaves the library / repo byte-identical. No model."""
import pathlib

import pytest

from skillax.skills import budget
from skillax.skills.library import SkillLibrary
from skillax.skills.repo import SkillBudgetError, SkillRepo
from skillax.skills.tool_calls import apply_tool_calls


def test_fallback_count_and_pushes_over():
    assert [budget.fallback_count(s) for s in ("", "a", "abcd", "abcde", "x" * 16)] == [0, 1, 1, 2, 4]
    assert budget.token_counter(None) is budget.fallback_count
    assert not budget.pushes_over(3, 99, 0)             # 0 = off
    assert not budget.pushes_over(3, 10, 10)            # at the budget is within it
    assert budget.pushes_over(3, 11, 10)
    assert not budget.pushes_over(15, 12, 10)           # shrinking a store already over it: allowed
    assert budget.pushes_over(12, 13, 10)
    with pytest.raises(ValueError, match=">= 0"):
        budget.check_budget(-1)


def _strategy(c: str, tokens: int) -> str:
    """A strategy whose default record count (ceil(len("" + "\\n" + s) / 4)) is `tokens`."""
    return c * (4 * tokens - 1)


def test_skill1_budget_evicts_by_score_then_oldest_and_never_the_new_skill():
    lib = SkillLibrary(":memory:", token_budget=12)
    ids = [lib.add(f"task {c}", "", _strategy(c, 4), step=0).id for c in "abc"]   # 3 x 4 = 12 tokens
    assert ids == [1, 2, 3] and lib.size_tokens() == 12
    lib.conn.execute("UPDATE skills SET utility = 0.3 WHERE id = 2")             # score 0.3 * log2(2)
    adm = lib.add("task d", "", _strategy("d", 4), step=1)                        # 16 > 12
    assert adm.status == "inserted" and adm.id == 4
    assert adm.budget_evicted == (2,) and adm.evicted == (2,)                     # lowest score first
    assert lib.ids() == [1, 3, 4] and lib.size_tokens() == 12
    adm = lib.add("task e", "", _strategy("e", 8), step=2)                        # 12 + 8 = 20 > 12
    assert adm.budget_evicted == (1, 3)                                           # ties (0.5): oldest first
    assert lib.ids() == [4, 5] and lib.size_tokens() == 12                        # id 5 (new) kept
    # a merge changes no text: no eviction, same size
    assert lib.add("task e", "", _strategy("e", 8), step=3).status == "merged" and lib.size_tokens() == 12


def test_skill1_skill_alone_over_budget_is_rejected_and_the_library_is_byte_identical(tmp_path):
    lib = SkillLibrary(tmp_path / "lib.sqlite", token_budget=12)
    lib.add("task a", "", _strategy("a", 4), step=0)
    before = lib.state_bytes()
    adm = lib.add("task z", "", _strategy("z", 13), step=1)                       # 13 > 12 alone
    assert adm.status == "rejected" and adm.over_budget and adm.reason.startswith(budget.BUDGET_REASON)
    assert "13 tokens > 12" in adm.reason
    assert lib.state_bytes() == before and lib.ids() == [1]
    off = SkillLibrary(":memory:")                                                # budget 0: the paper
    off.add("task z", "", _strategy("z", 13), step=1)
    assert off.size_tokens() == 13 and len(off) == 1


def _tree(root: pathlib.Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".changelog.jsonl"}


def count_x(text: str) -> int:
    """Hand-countable tokens: the number of 'x' characters (none in names or frontmatter)."""
    return text.count("x")


def call(fn: str, **args) -> str:
    import json

    return f"<tool_call>{json.dumps({'name': fn, 'arguments': args})}</tool_call>"


def test_skillos_over_budget_calls_fail_as_invalid_and_leave_the_repo_identical(tmp_path):
    repo = SkillRepo(tmp_path / "r", durable=False, token_budget=5, count_tokens=count_x)
    rep = apply_tool_calls(repo, call("insert_skill", name="alpha", description="d", body="xxx")
                           + call("insert_skill", name="beta", description="d", body="xx"))     # 3 + 2 = 5
    assert rep.n_applied == 2 and repo.size_tokens() == 5
    state, files = repo.state(), _tree(repo.root)
    rep = apply_tool_calls(repo, call("insert_skill", name="gamma", description="d", body="x")  # 6 > 5
                           + call("update_skill", name="beta", body="xxx"))                     # 6 > 5
    assert [(c.applied, c.over_budget) for c in rep.calls] == [(False, True), (False, True)]
    assert rep.r_fc() == 0.0 and all(c.error.startswith(budget.BUDGET_REASON) for c in rep.calls)
    assert repo.state() == state and _tree(repo.root) == files and repo.verify() == []
    assert [r["applied"] for r in repo.read_changelog()[-2:]] == [False, False]          # logged as failed
    rep = apply_tool_calls(repo, call("update_skill", name="alpha", body="x")               # 5 -> 3
                           + call("insert_skill", name="gamma", description="d", body="x")  # 4
                           + call("insert_skill", name="delta", description="d", body="xx"))  # 6 > 5
    assert [(c.applied, c.over_budget) for c in rep.calls] == [(True, False), (True, False), (False, True)]
    assert rep.r_fc() == pytest.approx(2 / 3) and repo.size_tokens() == 4
    with pytest.raises(SkillBudgetError):                                                 # the repo API too
        repo.insert("delta", "d", "xx")


def test_skillos_a_repo_seeded_over_budget_may_shrink_but_not_grow(tmp_path):
    from skillax.skills.skill_md import make_skill

    repo = SkillRepo(tmp_path / "r", durable=False, token_budget=2, count_tokens=count_x)
    repo.import_skill(make_skill("alpha", "d", "xxxx"))              # imports are not refused: 4 > 2
    rep = apply_tool_calls(repo, call("update_skill", name="alpha", body="xxxxx")   # 5: grows, refused
                           + call("update_skill", name="alpha", body="xxx"))        # 3: shrinks, allowed
    assert [c.applied for c in rep.calls] == [False, True] and repo.size_tokens() == 3


def test_skillos_new_repo_carries_the_budget(tmp_path):
    from skillax.methods.skillos.rollout import new_repo

    repo = new_repo(tmp_path / "g0-n0", token_budget=1, count_tokens=count_x)
    (c,) = apply_tool_calls(repo, call("insert_skill", name="alpha", description="d", body="xx")).calls
    assert c.over_budget and len(repo) == 0
    assert new_repo(tmp_path / "g0-n1").token_budget == 0         # default off (the paper)
