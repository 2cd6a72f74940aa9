"""Skill-alpha's skill budget (``skill.token_budget``, issue 22 item 7) on hand-computed sizes
(the ``skills.budget`` fallback: ceil(chars / 4) of the worker's rule text). No model."""
from skillax.methods.skill_alpha.action_space import edit_in_space, is_budget_rejection, skill_tokens
from skillax.methods.skill_alpha.loop import step_metrics
from skillax.methods.skill_alpha.unit import UnitConfig, UnitInput, score_candidates
from skillax.skills.rules import make_rule_body, with_rules
from skillax.skills.skill_md import make_skill, render_skill_md
from tests.methods.test_skill_alpha_ablations import TableScorer, edit
from tests.methods.test_skill_alpha_data import FAMS, task


def z1():
    # worker text '- [R1] Open doors first.' = 24 chars -> 6 tokens
    return with_rules(make_skill("s", "d"), make_rule_body(["Open doors first."]))


def test_edit_over_budget_is_invalid_and_z_is_unchanged():
    z = z1()
    assert skill_tokens(z) == 6 and skill_tokens(make_skill("s", "d")) == 0
    out = edit("CREATE", content="magic")        # '- [R1] Open doors first.\n- [R2] magic' = 37 -> 10 tokens
    assert edit_in_space(z, out, token_budget=10).valid
    res = edit_in_space(z, out, token_budget=9)
    assert not res.valid and is_budget_rejection(res) and "10 tokens > 9" in res.reason
    assert res.skill is z and render_skill_md(res.skill) == render_skill_md(z1())   # byte-identical
    assert edit_in_space(z, edit("PRUNE", ["R1"]), token_budget=1).valid             # 6 -> 0
    assert edit_in_space(z, out, token_budget=0).valid                               # 0 = off
    bad = edit_in_space(z, "garbage", token_budget=9)
    assert not bad.valid and not is_budget_rejection(bad)                            # other invalid reasons


def test_over_budget_candidate_costs_no_worker_call_and_is_counted():
    z = z1()
    texts = [edit("CREATE", content="magic"), edit("PRUNE", ["R1"]), edit("NOOP")]
    sc = TableScorer()
    (r,) = score_candidates([UnitInput(z, ("e",), (task(FAMS[0], 0),))], [texts], sc,
                            UnitConfig(group_size=3, token_budget=9))
    assert [c.valid for c in r.candidates] == [False, True, True]
    assert len(sc.jobs) == 2                                 # control + PRUNE; the rejected CREATE none
    assert r.rewards == [0.0, 0.0, 1.0]                      # nothing beats control: NOOP rewarded
    m = step_metrics([r], {})
    assert m["budget_rejections"] == 1
    assert r.carry_index is None and r.carry is z and m["skill_tokens"] == 6.0   # no edit gains: z kept
    (free,) = score_candidates([UnitInput(z, ("e",), (task(FAMS[0], 0),))], [texts], TableScorer(),
                               UnitConfig(group_size=3))
    assert free.rewards == [1.0, 0.0, 0.0]                   # without the budget the magic rule wins
    m = step_metrics([free], {})
    assert free.carry_index == 0 and m["budget_rejections"] == 0 and m["skill_tokens"] == 10.0
