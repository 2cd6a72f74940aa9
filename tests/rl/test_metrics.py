"""Metrics JSONL writer and learning-curve plot."""
import json

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
    # appending on resume: a repeated step keeps its last record
    with MetricsWriter(path, initial_step=4, progress=False) as w:
        w.write(5, {"loss": 9.0})
    recs = read_jsonl(path)
    assert [r["step"] for r in recs] == [1, 2, 3, 4, 5] and recs[-1]["loss"] == 9.0
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
