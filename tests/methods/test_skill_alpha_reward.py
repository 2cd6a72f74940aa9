"""Skill-alpha rollback reward, carry rule and GRPO rows on hand-built groups."""
import numpy as np
import pytest

from skillax.methods.skill_alpha.carry import choose_carry
from skillax.methods.skill_alpha.reward import anchor_mean, rollback_rewards


def test_edit_beats_control_is_1():
    r = rollback_rewards(["CREATE"], [True], [1.0], 0.0)
    assert r.tolist() == [1.0]


def test_tie_is_0():
    assert rollback_rewards(["UPDATE", "PRUNE"], [True, True], [1.0, 0.0], 1.0).tolist() == [0.0, 0.0]
    assert rollback_rewards(["MERGE"], [True], [0.0], 0.0).tolist() == [0.0]


def test_noop_rules():
    # no valid edit beats control -> NOOP 1; the edits (tie / worse) 0
    r = rollback_rewards(["NOOP", "CREATE", "UPDATE"], [True, True, True], [None, 1.0, 0.0], 1.0)
    assert r.tolist() == [1.0, 0.0, 0.0]
    # one valid edit beats control -> NOOP 0, that edit 1
    r = rollback_rewards(["NOOP", "CREATE", "UPDATE"], [True, True, True], [None, 1.0, 0.0], 0.0)
    assert r.tolist() == [0.0, 1.0, 0.0]
    # an *invalid* candidate never counts as "beating" control, whatever r_edit says
    r = rollback_rewards(["NOOP", "CREATE"], [True, False], [None, 1.0], 0.0)
    assert r.tolist() == [1.0, 0.0]


def test_invalid_and_failed_parse_are_0():
    r = rollback_rewards([None, "UPDATE", "CREATE"], [False, False, True], [None, None, 1.0], 0.0)
    assert r.tolist() == [0.0, 0.0, 1.0]


def test_all_noop_group_and_shapes():
    r = rollback_rewards(["NOOP"] * 8, [True] * 8, [None] * 8, 0.5)
    assert r.tolist() == [1.0] * 8 and r.dtype == np.float64


def test_multi_anchor_mean_difference():
    ctrl = anchor_mean([1, 0, 0])          # 1/3
    better = anchor_mean([1, 1, 0])        # 2/3
    same = anchor_mean([0, 0, 1])          # 1/3: different queries solved, same mean -> tie
    r = rollback_rewards(["CREATE", "UPDATE", "NOOP"], [True, True, True], [better, same, None], ctrl)
    assert r.tolist() == [1.0, 0.0, 0.0]


def test_graded_variant():
    r = rollback_rewards(["CREATE", "UPDATE", "NOOP", None], [True, True, True, False],
                         [1.0, 0.0, None, None], 0.5, graded=True)
    assert r.tolist() == [0.5, -0.5, -0.5, -1.0]
    r = rollback_rewards(["UPDATE", "NOOP"], [True, True], [0.25, None], 0.5, graded=True)
    assert r.tolist() == [-0.25, 0.0]


def test_bad_input_raises():
    with pytest.raises(ValueError, match="align"):
        rollback_rewards(["NOOP"], [True, True], [None], 0.0)
    with pytest.raises(ValueError, match="no finite r_edit"):
        rollback_rewards(["CREATE"], [True], [None], 0.0)
    with pytest.raises(ValueError, match="unknown action"):
        rollback_rewards(["DELETE"], [True], [1.0], 0.0)
    with pytest.raises(ValueError, match="r_ctrl"):
        rollback_rewards(["NOOP"], [True], [None], float("nan"))
    with pytest.raises(ValueError):
        anchor_mean([])


def test_carry_rules():
    acts = ["NOOP", "CREATE", "UPDATE", "PRUNE"]
    valid = [True, True, True, False]
    r_edit = [None, 0.5, 1.0, 1.0]
    assert choose_carry("best", acts, valid, r_edit, 0.0) == 2      # largest gain among valid
    assert choose_carry("best", acts, valid, r_edit, 1.0) is None   # nothing beats control
    assert choose_carry("best", ["CREATE", "UPDATE"], [True, True], [1.0, 1.0], 0.0) == 0  # tie: first
    assert choose_carry("first", acts, valid, r_edit, 0.0) is None  # candidate 0 is NOOP
    assert choose_carry("first", acts[1:], valid[1:], r_edit[1:], 1.0) == 0  # on-policy, even if worse
    assert choose_carry("keep", acts, valid, r_edit, 0.0) is None
    assert choose_carry("best", acts, valid, r_edit, None) is None  # skipped unit
    with pytest.raises(ValueError):
        choose_carry("worst", acts, valid, r_edit, 0.0)


def _unit(rewards, skipped=None):
    from skillax.methods.common.rows import Generation
    from skillax.methods.skill_alpha.unit import Candidate, UnitResult
    from skillax.skills.edits import EditResult
    from skillax.skills.skill_md import make_skill

    z = make_skill("s", "d")
    cands = [Candidate("t", EditResult(True, None, z), Generation([1, 2], [3], [-0.5], "edit", i), reward=r)
             for i, r in enumerate(rewards)]
    return UnitResult(None, cands, r_ctrl=0.0, skipped=skipped)


def test_training_rows_grpo_ddof1():
    from skillax.methods.skill_alpha.objectives import training_rows

    gens, adv, st = training_rows([_unit([1.0, 0.0]), _unit([0.0] * 3), _unit([1.0, 1.0], skipped="worker error")])
    # G = 2, rewards (1, 0), Bessel std -> +-0.7071 (PITFALLS 2); the all-zero unit keeps 3 rows at A = 0
    np.testing.assert_allclose(adv["edit"], [0.70710678, -0.70710678, 0, 0, 0], atol=1e-5)
    assert st == {"rows": 5, "groups": 2, "zero_variance_groups": 1} and len(gens) == 5
    gens, adv, st = training_rows([_unit([1.0, 0.0]), _unit([0.0] * 3)], zero_variance="drop")
    assert st["rows"] == 2 and st["groups"] == 1
    with pytest.raises(ValueError):
        training_rows([], zero_variance="maybe")


def test_lane_cycle_and_checkpoint_roundtrip():
    from skillax.methods.skill_alpha.loop import Lane
    from skillax.skills.rules import make_rule_body, with_rules
    from skillax.skills.skill_md import make_skill

    z0 = make_skill("s", "d")
    z1 = with_rules(z0, make_rule_body(["Open the fridge first."]))
    lane = Lane(1, 1, 0, z0)
    lane.advance(z1, n_items=3, z0=z0)
    assert (lane.position, lane.epoch, lane.skill) == (2, 0, z1)
    back = Lane.from_host(lane.to_host())
    assert back == lane
    lane.advance(z1, n_items=3, z0=z0)                 # end of the stream: next pass from z0
    assert (lane.position, lane.epoch, lane.skill) == (0, 1, z0)


def test_step_metrics_action_mix():
    from skillax.methods.skill_alpha.loop import step_metrics
    from skillax.methods.skill_alpha.unit import Candidate, UnitResult
    from skillax.skills.edits import edit_skill
    from skillax.skills.skill_md import make_skill

    z = make_skill("s", "d")
    outs = ['{"action": "NOOP"}', '{"action": "CREATE", "content": "x"}', "junk", '{"action": "PRUNE", "target": ["R1"]}']
    cands = [Candidate(o, edit_skill(z, o), reward=r) for o, r in zip(outs, [0.0, 1.0, 0.0, 0.0])]
    cands[1].r_edit, cands[0].r_edit = 1.0, 0.0
    live = UnitResult(None, cands, r_ctrl=0.0, carry_index=1, worker_jobs=2, prompt_tokens=100)
    dead = UnitResult(None, cands[:1], skipped="worker error", worker_jobs=1, prompt_tokens=50)
    m = step_metrics([live, dead], {"time/editor": 1.5})
    assert m["reward/mean"] == 0.25 and m["units_skipped"] == 1 and m["valid_rate"] == 0.5
    assert m["action/NOOP"] == m["action/CREATE"] == 0.25 and m["action/invalid"] == 0.5
    assert m["parse_fail_rate"] == 0.25 and m["edit_beats_ctrl"] == 1.0 and m["worker_jobs"] == 3
    assert m["prompt_tokens"] == 75.0 and m["time/editor"] == 1.5 and m["carried_edits"] == 1
    # rewards [0, 1, 0, 0] of the live unit: variance 1/1 units, population std sqrt(3)/4
    assert m["units_with_variance"] == 1.0 and m["zero_variance_units"] == 0 and m["edit_below_ctrl"] == 0.0
    assert abs(m["reward/std_within"] - 3 ** 0.5 / 4) < 1e-12


def test_max_train_minutes_stops_after_the_step_that_passes_it(tmp_path, monkeypatch):
    """Wall-clock cap (as Skill1's): checkpoint + stop after the step that passes it; 0 = off."""
    import json

    import ml_collections

    from skillax.methods.skill_alpha import loop
    from skillax.methods.skill_alpha.evidence_stream import EvidenceStream, StreamItem
    from skillax.methods.skill_alpha.unit import UnitConfig, UnitResult
    from skillax.skills.skill_md import make_skill

    z0 = make_skill("s", "d")
    stream = EvidenceStream([StreamItem(0, "trajectory", "f", ("u",), ("a",))], {})
    monkeypatch.setattr(loop, "_inputs", lambda lanes, st, cfg: [None for _ in lanes])
    monkeypatch.setattr(loop, "run_units", lambda inputs, editor, scorer, ucfg: (
        [UnitResult(loop.UnitInput(z0, ("u",), (), lane=i), [], skipped="test", carry=z0)
         for i, _ in enumerate(inputs)], {}))
    monkeypatch.setattr("skillax.rl.plot.plot", lambda *a, **k: None)

    class Engine:
        tokenizer = None                # the skill budget's count: the skills.budget fallback

        def policy_sampler(self, t):
            return None

        def save(self, step, host):
            self.saved.append(step)

    st = type("St", (), {"stream": stream, "scorer": None})()
    for minutes, want_lines, want_saved in ((1e-9, 1, [0]), (0.0, 3, [1, 2])):
        cfg = ml_collections.ConfigDict(dict(steps=3, checkpoint_every=2, max_train_minutes=minutes,
                                             rl=dict(temperature=1.0), unit=dict(zero_variance="keep")))
        eng, wd = Engine(), tmp_path / str(minutes)
        eng.saved = []
        wd.mkdir()
        loop.train(cfg, eng, st, [loop.Lane(0, 0, 0, z0)], z0, UnitConfig(), 0, wd)
        lines = [json.loads(x) for x in (wd / "metrics.jsonl").read_text().splitlines()]
        assert len(lines) == want_lines and eng.saved == want_saved
        assert lines[0]["skill_tokens"] == 0.0 and lines[0]["budget_rejections"] == 0   # z0 has no rules
