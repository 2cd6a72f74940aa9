"""Metrics JSONL writer and learning-curve plot."""
import json
import time

import jax.numpy as jnp
import numpy as np
import pytest

from skillax.rl.metrics import MetricsWriter, read_jsonl
from skillax.rl.plot import plot


def test_jsonl_lines_and_plot(tmp_path):
    path = tmp_path / "m" / "metrics.jsonl"
    with MetricsWriter(path, total_steps=5, progress=False) as w:
        for s in range(1, 6):
            w.write(s, {"loss": jnp.float32(1.0 / s), "reward": np.float64(0.1 * s), "tokens": 7, "bad": float("nan")})
    lines = path.read_text().splitlines()
    assert len(lines) == 5
    rec = json.loads(lines[1])
    assert rec["step"] == 2 and rec["loss"] == pytest.approx(0.5) and rec["tokens"] == 7
    assert rec["bad"] == "nan" and rec["elapsed"] >= 0 and rec["time"] > 1e9
    # read_jsonl: a repeated step keeps its last record
    with open(path, "a") as f:
        f.write(json.dumps({"step": 5, "loss": 9.0}) + "\n")
    recs = read_jsonl(path)
    assert [r["step"] for r in recs] == [1, 2, 3, 4, 5] and recs[-1]["loss"] == 9.0
    with MetricsWriter(path, initial_step=6, progress=False):   # nothing at or after step 6
        pass
    assert len(path.read_text().splitlines()) == 6
    out = tmp_path / "curves.png"
    keys = plot(path, out)
    assert keys == ["loss", "reward", "tokens"] and out.stat().st_size > 1000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot(path, tmp_path / "one.png", keys=["reward"]) == ["reward"]
    with pytest.raises(ValueError, match="not found"):
        plot(path, tmp_path / "x.png", keys=["nope"])


def test_bad_metrics(tmp_path):
    with MetricsWriter(tmp_path / "m.jsonl", progress=False) as w:
        with pytest.raises(ValueError, match="not a scalar"):
            w.write(1, {"v": np.ones(3)})
        with pytest.raises(ValueError, match="reserved"):
            w.write(1, {"step": 3})


def test_resume_truncates_to_the_resumed_step_and_keeps_wall_time(tmp_path):
    """Issue 23, item 3: a run checkpointed after step 1 that logged step 2 and died in the
    middle of writing step 3's line resumes at step 2: steps 2 and the cut line are dropped,
    each step ends up logged once, ``elapsed`` continues from the kept records' 20.0 s."""
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "time": 1e9 + s, "elapsed": 20.0 * s, "loss": s}) + "\n"
                            for s in range(3)) + '{"step": 3, "ti')
    t0 = time.monotonic()
    with MetricsWriter(path, total_steps=4, initial_step=2) as w:
        assert w._bar.n == 2
        w.write(2, {"loss": 20.0})
        w.write(3, {"loss": 30.0})
        assert w._bar.n == 4                       # 4 of 4 steps done, not 3 of 4
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["step"] for r in recs] == [0, 1, 2, 3]
    assert [r["loss"] for r in recs] == [0, 1, 20.0, 30.0]
    # the kept 20.0 s plus at most the wall time this resumed writer ran (no speed bound)
    assert 20.0 <= recs[2]["elapsed"] <= recs[3]["elapsed"] <= 20.0 + (time.monotonic() - t0)
    # a fresh run (no checkpoint: initial step 0) starts an empty log
    t0 = time.monotonic()
    with MetricsWriter(path, total_steps=4, initial_step=0) as w:
        assert w._bar.n == 0
        w.write(0, {"loss": 5.0})
        assert w._bar.n == 1
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(r["step"], r["loss"]) for r in recs] == [(0, 5.0)]
    assert 0.0 <= recs[0]["elapsed"] <= time.monotonic() - t0      # restarted, not carried on
