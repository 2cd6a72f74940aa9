"""RL stop rule (minutes budget, absolute deadline) and the evaluation output files."""
import json

import ml_collections
import pytest

from skillax.evaluation import EpisodeRecord, read_records
from skillax.methods.common.clock import RLClock, next_step_estimate
from skillax.methods.common.eval_io import eval_splits, write_condition


def test_clock_budget_and_deadline(tmp_path):
    t = [1000.0]
    c = RLClock(max_train_minutes=1.0, now=lambda: t[0]).start()
    t[0] = 1050.0
    assert c.stop_reason(10.0) is None
    t[0] = 1061.0
    assert "max_train_minutes" in c.stop_reason(10.0)
    d = RLClock(train_until_unix=2000.0, now=lambda: t[0]).start()
    t[0] = 1985.0
    assert d.stop_reason(10.0) is None          # 1995 <= 2000
    assert "deadline" in d.stop_reason(20.0)   # 2005 > 2000
    assert RLClock().start().stop_reason(1e9) is None
    f = tmp_path / "deadline"
    e = RLClock(train_until_unix=5000.0, train_until_file=str(f), now=lambda: t[0]).start()
    assert e.deadline() == 5000.0                 # no file yet
    f.write_text("1990\n")
    assert e.deadline() == 1990.0 and "deadline" in e.stop_reason(10.0)
    f.write_text("garbage")
    assert e.deadline() == 5000.0
    with pytest.raises(ValueError):
        RLClock(max_train_minutes=-1)


def test_next_step_estimate_leaves_out_the_steps_compile_time():
    # campaign 17's step 0 on the H200: 104.2 s, of which (say) 84.0 s jax compile -> ~20 s
    assert next_step_estimate(104.2, 84.0) == pytest.approx(20.2)
    assert next_step_estimate(15.0, 0.0) == 15.0          # a step that built nothing
    assert next_step_estimate(5.0, 7.0) == 0.0            # timer skew never gives a negative step
    t = [1000.0]
    d = RLClock(train_until_unix=1100.0, now=lambda: t[0]).start()
    t[0] = 1005.0                                         # 95 s left: 104 s would stop, 20 s does not
    assert "deadline" in d.stop_reason(104.2) and d.stop_reason(next_step_estimate(104.2, 84.0)) is None


def test_eval_splits_and_write_condition(tmp_path):
    cfg = ml_collections.ConfigDict({"env": {"eval_split": "valid_unseen"}, "eval": {"splits": ""}})
    assert eval_splits(cfg) == ("valid_unseen",)
    cfg.eval.splits = "valid_unseen, valid_seen"
    assert eval_splits(cfg) == ("valid_unseen", "valid_seen")
    recs = [EpisodeRecord("valid_seen/a", "valid_seen", "pick_heat_then_place_in_recep", True, 7),
            EpisodeRecord("valid_seen/b", "valid_seen", "pick_heat_then_place_in_recep", False, 30)]
    s = write_condition(tmp_path, "with_library", "valid_seen", recs)
    assert s["success"] == 0.5 and s["per_type"] == {"Heat": [1, 2]} and s["records"] == "eval/with_library__valid_seen.jsonl"
    assert [r.task_id for r in read_records(tmp_path / s["records"])] == ["valid_seen/a", "valid_seen/b"]
    json.dumps(s)
    with pytest.raises(ValueError, match="condition name"):
        write_condition(tmp_path, "With Library", "valid_seen", recs)
