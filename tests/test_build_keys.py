"""benchmarks/build_keys.py: a run's sampler build log replayed under other shape buckets
(hand-computed program counts, the exactness guard, the CLI's JSON lines)."""
from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest


def _mod():
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks/build_keys.py"
    spec = importlib.util.spec_from_file_location("build_keys", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _build(step, batch, chunk, seconds, prefill_rows=None, new=128, shared=False):
    return dict(step=step, batch=batch, prefill_rows=prefill_rows or batch, chunk=chunk,
                prefill_chunk=chunk, new_bucket=new, cache_len=0, fresh=True, shared=shared,
                seconds=seconds)


# step 0: 8 rows x 384; step 1: 16 rows x 384 (a new row bucket); step 2: 32 rows sharing the
# prefill of 8 prompts x 768; step 3: 32 rows x 512
LOG = [_build(0, 8, 384, 10.0), _build(1, 16, 384, 4.0), _build(2, 32, 768, 6.0, prefill_rows=8, shared=True),
       _build(3, 32, 512, 3.0)]
ROWS32 = "32,64,96,128,192,256,384,512,768,1024"


@pytest.fixture
def run(tmp_path):
    d = tmp_path / "arm"
    d.mkdir()
    (d / "sampler_builds.jsonl").write_text("".join(json.dumps(b) + "\n" for b in LOG))
    (d / "config.json").write_text(json.dumps({"model": {"max_len": 4096, "batch_buckets": "auto"}}))
    return d


def test_replay_hand_counts():
    bk = _mod()
    base, max_len = bk.run_buckets({"model": {"max_len": 4096}}, "gpu")
    assert base.batch[:3] == (8, 16, 32) and max_len == 4096
    same = bk.replay(LOG, bk.policy_buckets("run/run", base, "gpu"), max_len)
    assert same == dict(programs=4, at_step0=1, after_step0=3, logged_s=23.0, saved_s_upper=0.0)
    # rows >= 32: 8 and 16 rows both pad to 32 (one key), the shared prefill of 8 prompts pads
    # to 32 = the batch, so it no longer shares; three keys (384, 768, 512 chunks)
    rows = bk.replay(LOG, bk.policy_buckets(f"{ROWS32}/run", base, "gpu"), max_len)
    assert rows == dict(programs=3, at_step0=1, after_step0=2, logged_s=23.0, saved_s_upper=4.0)
    # coarse prompts too: 384 and 512 -> 512 (one key with 32 rows), 768 -> 1024
    both = bk.replay(LOG, bk.policy_buckets(f"{ROWS32}/coarse", base, "gpu"), max_len)
    assert both == dict(programs=2, at_step0=1, after_step0=1, logged_s=23.0, saved_s_upper=7.0)
    assert bk.new_key(LOG[2], bk.policy_buckets("run/coarse", base, "gpu"), max_len)[:3] == (32, 8, 1024)
    # max_len clips the chunk like the sampler does: 1024 + 128 in a 1,100-token window
    assert bk.new_key(LOG[2], bk.policy_buckets("run/coarse", base, "gpu"), 1100)[2:5] == (972, 128, 1100)


def test_policy_refused_when_not_exact():
    bk = _mod()
    base, _ = bk.run_buckets({}, "gpu")
    for bad, msg in (("24,32/run", "batch sizes \\[24\\]"), ("run/100,200", "prompt sizes"),
                     ("run", "BATCH/PROMPT"), ("x/run", "batch_buckets")):
        with pytest.raises(ValueError, match=msg):
            bk.policy_buckets(bad, base, "gpu")


def test_cli_writes_lines(run, tmp_path, capsys):
    bk = _mod()
    out = tmp_path / "keys.jsonl"
    assert bk.main([str(run), "--policy", "run/run", "--policy", f"{ROWS32}/coarse", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(x["policy"], x["programs"], x["after_step0"]) for x in lines] == [("run/run", 4, 3),
                                                                                 (f"{ROWS32}/coarse", 2, 1)]
    assert all(x["builds_logged"] == 4 and x["command"].startswith("python benchmarks/build_keys.py") for x in lines)
    assert "| programs |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no sampler build log"):
        bk.main([str(tmp_path)])
