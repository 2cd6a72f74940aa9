"""Hand-computed values for the evaluation statistics and the record files."""

import json

import numpy as np
import pytest

from skillax.evaluation import EpisodeRecord, paired_bootstrap, paired_delta, read_records, summarize, \
    wilson_interval, write_records
from skillax.evaluation.stats import mcnemar_exact_p, seed_spread


def test_wilson_hand_values():
    # p = 0.5, n = 10, z = 1.96: centre 0.5, half = 1.96*sqrt(0.025 + 0.0096)/(1.3842) = 0.2634
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(134, 134)
    assert hi == 1.0 and lo == pytest.approx(0.9721, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_paired_bootstrap_constant_difference_and_errors():
    d, (lo, hi) = paired_bootstrap([0, 0, 0, 0], [1, 1, 1, 1])
    assert d == 1.0 and lo == 1.0 and hi == 1.0
    d, (lo, hi) = paired_bootstrap([0, 1] * 50, [0, 1] * 50)
    assert d == 0.0 and lo == 0.0 and hi == 0.0
    d, (lo, hi) = paired_bootstrap([0] * 100, [1] * 10 + [0] * 90, n_boot=4000, seed=1)
    # mean 0.1; binomial sd sqrt(0.09/100) = 0.03 -> interval ~ [0.05, 0.16]
    assert d == pytest.approx(0.1) and 0.03 <= lo <= 0.07 and 0.13 <= hi <= 0.17
    with pytest.raises(ValueError):
        paired_bootstrap([0, 1], [1])


def test_mcnemar_exact():
    assert mcnemar_exact_p(0, 0) == 1.0
    # 5 vs 0 discordant: 2 * 0.5**5 = 0.0625
    assert mcnemar_exact_p(5, 0) == pytest.approx(0.0625)
    assert mcnemar_exact_p(3, 3) == 1.0


def _rec(i, won, tt="pick_and_place_simple", steps=10, inv=0, ret=-1):
    return EpisodeRecord(task_id=f"valid_unseen/g{i}", split="valid_unseen", task_type=tt, won=won, steps=steps,
                         invalid_actions=inv, retrieved=ret)


def test_seed_spread_hand_values():
    # [0.1, 0.3]: mean 0.2, sd = sqrt(0.02) = 0.141421, t_{0.975,1} = 12.7062 -> half = 12.7062 * 0.1
    out = seed_spread([0.1, 0.3])
    assert out["k"] == 2 and out["mean"] == pytest.approx(0.2) and out["sd"] == pytest.approx(0.1414214, abs=1e-6)
    assert out["ci95"] == pytest.approx([0.2 - 1.270620, 0.2 + 1.270620], abs=1e-5)
    # four seeds of campaigns 5-6 (valid_unseen upper bounds): t_{0.975,3} = 3.182446
    out = seed_spread([-0.134, 0.172, -0.127, 0.067])
    assert out["mean"] == pytest.approx(-0.0055) and out["sd"] == pytest.approx(0.150600, abs=1e-5)
    assert out["ci95"][1] - out["mean"] == pytest.approx(3.182446 * 0.150600 / 2, abs=1e-5)
    with pytest.raises(ValueError, match=">= 2"):
        seed_spread([0.1])


def test_summarize_per_type_and_rates():
    recs = [_rec(0, True, steps=5, inv=1, ret=1), _rec(1, False, steps=30, ret=0),
            _rec(2, True, "look_at_obj_in_light", steps=5, ret=2)]
    s = summarize(recs)
    assert s["n"] == 3 and s["successes"] == 2 and s["success"] == pytest.approx(2 / 3)
    assert s["per_type"] == {"Look": [1, 1], "Pick": [1, 2]}
    assert s["mean_steps"] == pytest.approx(40 / 3)
    assert s["invalid_action_rate"] == pytest.approx(1 / 40)
    assert s["retrieval_rate"] == pytest.approx(2 / 3)
    assert summarize([_rec(0, False)])["retrieval_rate"] is None
    with pytest.raises(ValueError, match="duplicate"):
        summarize([_rec(0, True), _rec(0, False)])


def test_paired_delta_joins_on_task_id():
    base = [_rec(i, i < 2) for i in range(10)]                 # wins g0, g1
    arm = [_rec(i, i in (1, 2, 3, 4)) for i in reversed(range(10))]   # wins g1..g4
    out = paired_delta(base, arm, n_boot=2000)
    assert out["n"] == 10 and out["delta"] == pytest.approx(0.2)
    assert out["arm_only"] == 3 and out["baseline_only"] == 1
    assert out["mcnemar_p"] == pytest.approx(mcnemar_exact_p(3, 1))
    assert out["delta_ci95"][0] <= 0.2 <= out["delta_ci95"][1]
    with pytest.raises(ValueError, match="different games"):
        paired_delta(base, arm[:-1])
    assert paired_delta(base, arm[:-1], require_same_games=False)["n"] == 9


def test_pooled_paired_delta_hand_values():
    from skillax.evaluation import pooled_paired_delta
    # run 1: arm wins g1 only (delta +0.5 on 2 games); run 2: both arms lose both games (0).
    r1 = ([_rec(0, False), _rec(1, False)], [_rec(0, False), _rec(1, True)])
    r2 = ([_rec(0, False), _rec(1, False)], [_rec(1, False), _rec(0, False)])
    out = pooled_paired_delta([r1, r2], n_boot=2000)
    # per-game means: baseline (0, 0), arm (0, 0.5) -> delta 0.25; bootstrap of [0, 0.5] spans [0, 0.5]
    assert out["runs"] == 2 and out["n"] == 2 and out["delta"] == pytest.approx(0.25)
    assert out["per_run"] == [pytest.approx(0.5), pytest.approx(0.0)]
    assert out["arm_only"] == 1 and out["baseline_only"] == 0 and out["mcnemar_p"] == 1.0
    assert out["delta_ci95"] == [pytest.approx(0.0), pytest.approx(0.5)]
    # one run equals paired_delta's point estimate and counts
    one = pooled_paired_delta([r1], n_boot=2000)
    ref = paired_delta(*r1, n_boot=2000)
    assert one["delta"] == ref["delta"] and one["arm_only"] == ref["arm_only"]
    with pytest.raises(ValueError, match="at least one"):
        pooled_paired_delta([])
    with pytest.raises(ValueError, match="n_boot"):
        pooled_paired_delta([r1], n_boot=0)
    with pytest.raises(ValueError, match="different games"):
        pooled_paired_delta([(r1[0], r1[1][:1])])
    with pytest.raises(ValueError, match="other games than run 0"):
        pooled_paired_delta([r1, ([_rec(2, False)], [_rec(2, True)])])
    with pytest.raises(ValueError, match="duplicate task_id"):
        pooled_paired_delta([(r1[0] + r1[0][:1], r1[1])])


def test_records_round_trip_and_bad_files(tmp_path):
    recs = [_rec(0, True), _rec(1, False, "pick_two_obj_and_place")]
    p = write_records(tmp_path / "eval" / "with__valid_unseen.jsonl", recs)
    back = read_records(p)
    assert [r.to_dict() for r in back] == [r.to_dict() for r in recs]
    assert back[1].short_type == "Pick2"
    with pytest.raises(ValueError, match="duplicate"):
        write_records(tmp_path / "x.jsonl", [recs[0], recs[0]])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(recs[0].to_dict()) + "\n{not json\n")
    with pytest.raises(ValueError, match="line 2"):
        read_records(bad)
    with pytest.raises(ValueError):
        EpisodeRecord(task_id="", split="s", task_type="t", won=True, steps=1)


def test_pool_seeds_keeps_the_latest_line_per_seed_and_needs_two_seeds(tmp_path):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks/learning/pool_seeds.py"
    spec = importlib.util.spec_from_file_location("pool_seeds", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    name = "search reader, seed {}: teacher skills - No Memory (upper bound)"
    lines = [{"method": "skillos", "comparison": name.format(1), "seed": 1, "split": "u", "n": 10, "delta": 0.5,
              "date": "a"},
             {"method": "skillos", "comparison": name.format(1), "seed": 1, "split": "u", "n": 10, "delta": 0.1,
              "date": "b"},                                        # seed 1 measured again later: this one
             {"method": "skillos", "comparison": "search reader: teacher skills - No Memory (upper bound)",
              "seed": 0, "split": "u", "n": 10, "delta": 0.3, "date": "a"},
             {"method": "skillos", "comparison": name.format(0), "seed": 0, "split": "s", "n": 10, "delta": 0.2,
              "date": "a"},                                        # one seed on split s: no pooled line
             {"method": "skillos", "comparison": "search reader, seed 2: untrained curator - No Memory",
              "seed": 2, "split": "u", "n": 10, "delta": 0.9, "date": "a"}]   # another comparison
    out = mod.pooled_lines(lines, mod.DEFAULT, "pooled", "d", "cmd")
    assert len(out) == 1 and out[0]["split"] == "u" and out[0]["seeds"] == [0, 1]
    assert out[0]["deltas"] == [0.3, 0.1] and out[0]["delta"] == pytest.approx(0.2)
    assert out[0]["delta_ci95"] == pytest.approx([0.2 - 1.270620, 0.2 + 1.270620], abs=1e-5)
    f = tmp_path / "summary.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    mod.main(["--summary", str(f), "--name", "pooled", "--write"])
    mod.main(["--summary", str(f), "--name", "pooled", "--write"])   # replaces, does not append twice
    got = [json.loads(x) for x in f.read_text().splitlines()]
    assert len(got) == len(lines) + 1 and got[-1]["comparison"] == "pooled"


def test_paired_steps_hand_values():
    from skillax.evaluation import paired_steps

    base = [_rec(0, True, steps=10), _rec(1, True, "look_at_obj_in_light", steps=20), _rec(2, False, steps=30),
            _rec(3, False, steps=12)]
    arm = [_rec(0, True, steps=6), _rec(1, True, "look_at_obj_in_light", steps=14), _rec(2, True, steps=9),
           _rec(3, False, steps=30), _rec(9, True, steps=1)]          # game 9: the baseline lacks it, ignored
    out = paired_steps(base, arm, cap=30)
    # all four shared games: (6-10) + (14-20) + (9-30) + (30-12) = -4 - 6 - 21 + 18 = -13 -> -3.25
    assert out["n"] == 4 and out["mean_steps"] == [18.0, 14.75] and out["delta_steps"] == pytest.approx(-3.25)
    assert out["delta_steps_ci95"][0] <= -3.25 <= out["delta_steps_ci95"][1]
    # won in both: games 0 and 1, deltas -4 and -6 -> -5; one Pick and one Look game
    assert out["won_both"] == 2 and out["delta_steps_won_both"] == pytest.approx(-5.0)
    assert -6.0 <= out["delta_steps_won_both_ci95"][0] <= out["delta_steps_won_both_ci95"][1] <= -4.0
    assert out["per_type_won_both"] == {"Look": [1, 20.0, 14.0], "Pick": [1, 10.0, 6.0]}
    assert out["losses"] == [2, 1] and out["losses_at_cap"] == [1, 1]   # game 3 lost at 12 steps: not at the cap
    none = paired_steps([_rec(0, False, steps=30)], [_rec(0, True, steps=5)], cap=30)
    assert none["won_both"] == 0 and none["delta_steps_won_both"] is None and none["per_type_won_both"] == {}
    with pytest.raises(ValueError, match="no game"):
        paired_steps([_rec(0, True)], [_rec(1, True)], cap=30)
    with pytest.raises(ValueError, match="duplicate"):
        paired_steps([_rec(0, True), _rec(0, False)], [_rec(0, True)], cap=30)


def test_record_from_trajectory_counts_invalid_reasons_and_keeps_the_first_response():
    """Each parse failure counted by its reason (parse_action on real texts), env rejections
    counted, the first response kept (truncated); summarize turns them into per-step rates."""
    from skillax.agents.agent_loop import Step, Trajectory, parse_action
    from skillax.agents.envs.base import Task
    from skillax.evaluation.records import RESPONSE_CHARS

    texts = ["<action>go to desk 1</action>" + "x" * 500,            # no think: still played
             "<think>I should open it.</think>",                       # no action tag
             "<think>I should go to desk 1.</think><action>go to desk 1</action>",
             "<action>take pen 1 from desk 1</action>"]
    steps = []
    for i, t in enumerate(texts):
        action, why = parse_action(t)
        steps.append(Step(observation="o", prompt=[], response=t, action=action, valid=why is None,
                          invalid_reason=why, env_invalid=(i == 2)))
    tr = Trajectory(task_id="valid_unseen/g", goal="put a pen in desk", steps=steps, won=True)
    task = Task(id="valid_unseen/g", env="alfworld", family="pick_and_place_simple", goal="put a pen in desk",
                split="valid_unseen")
    rec = EpisodeRecord.from_trajectory(task, tr)
    assert rec.invalid_actions == 3
    assert rec.invalid_reasons == {"missing_action_tag": 1, "missing_think": 2}
    assert rec.env_invalid == 1
    assert rec.first_response == texts[0][:RESPONSE_CHARS] and len(rec.first_response) == RESPONSE_CHARS
    # the first format-invalid step is step 0 (missing_think, truncated); with a parsed first
    # step the first invalid one is the missing action tag at step 1
    assert rec.first_invalid == {"step": 0, "reason": "missing_think", "response": texts[0][:RESPONSE_CHARS]}
    later = EpisodeRecord.from_trajectory(
        task, Trajectory(task_id=tr.task_id, goal=tr.goal, steps=steps[2:0:-1] + steps[3:]))
    assert later.first_invalid == {"step": 1, "reason": "missing_action_tag", "response": texts[1]}
    clean = EpisodeRecord.from_trajectory(task, Trajectory(task_id=tr.task_id, goal=tr.goal, steps=[steps[2]]))
    assert clean.first_invalid is None and clean.invalid_actions == 0
    assert EpisodeRecord.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
    # an older-style record (env_invalid None: not recorded) is left out of the play rates
    old = _rec(1, False, steps=6)
    assert old.env_invalid is None
    s = summarize([rec, old])
    assert s["invalid_reasons"] == {"missing_action_tag": pytest.approx(1 / 4), "missing_think": pytest.approx(2 / 4)}
    assert sum(s["invalid_reasons"].values()) == pytest.approx(rec.invalid_actions / rec.steps)
    assert s["env_invalid_rate"] == pytest.approx(1 / 4)
    assert summarize([old])["invalid_reasons"] is None and summarize([old])["env_invalid_rate"] is None
    with pytest.raises(ValueError, match="do not fit"):
        EpisodeRecord(task_id="t", split="s", task_type="x", won=False, steps=2, invalid_actions=1,
                      invalid_reasons={"missing_think": 2})
    with pytest.raises(ValueError, match="env_invalid"):
        EpisodeRecord(task_id="t", split="s", task_type="x", won=False, steps=2, env_invalid=3)
