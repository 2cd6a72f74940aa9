"""Skill1's predicted sampling programs (``model.precompile``) against campaign logs: every
program a real Qwen 0.5B ALFWorld arm built (``sampler_builds.jsonl``, GPU buckets) is in the
set ``methods.skill1.precompile.stage_calls`` predicts from the run's config.json."""

from __future__ import annotations

import json
import pathlib

import ml_collections
import pytest

from skillax.engine import Sampler
from skillax.engine.buckets import model_buckets
from skillax.engine.precompile import build_key, predicted_shapes
from skillax.methods.common.play import play_config
from skillax.methods.common import tasks as task_lib

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNS = ROOT / "benchmarks/results/learning"


def _qwen():
    """(ModelConfig, tokenizer) of the embedded Qwen2.5-Coder-0.5B, or skip when it is absent."""
    try:
        from skillax.models import gguf_assets, gguf_io
        from skillax.models.registry import model_config
        return model_config("qwen2.5-coder-0.5b"), gguf_io.load_gguf_tokenizer(gguf_assets.qwen25_coder_gguf_path())
    except Exception as e:  # noqa: BLE001 - the asset packages are optional
        pytest.skip(f"embedded Qwen2.5-Coder-0.5B unavailable: {e}")


@pytest.mark.parametrize("run", ["campaign_2026-12-07/skill1_grpo_rc", "campaign_2026-12-04b/skill1_full"])
def test_predicted_programs_cover_a_real_run(run):
    from skillax.methods.skill1.loop import rollout_config
    from skillax.methods.skill1.precompile import stage_calls

    d = RUNS / run
    cfg = ml_collections.ConfigDict(json.loads((d / "config.json").read_text()))
    model_cfg, tok = _qwen()
    try:
        goals = [t.goal for t in task_lib.load_tasks(cfg.env, cfg.env.train_split, None)]
    except Exception as e:  # noqa: BLE001 - ALFWorld data absent
        pytest.skip(f"ALFWorld tasks unavailable: {e}")
    sampler = Sampler(model_cfg, tok, max_len=int(cfg.model.max_len), buckets=model_buckets(cfg.model, "gpu"))
    shapes = predicted_shapes(sampler, stage_calls(cfg, tok, goals, play_config(cfg), rollout_config(cfg)))
    logged = {build_key(json.loads(x)) for x in (d / "sampler_builds.jsonl").read_text().splitlines() if x.strip()}
    assert logged <= {s.key() for s in shapes}, sorted(logged - {s.key() for s in shapes})


def test_engine_precompiles_only_when_switched_on(tmp_path):
    """PolicyEngine.precompile_sampler (the Skill1 loop's call before step 0): off by default --
    the stage list is not even built -- and on with ``model.precompile=True``: the predicted
    programs are built with the engine's sampler weights, and the metrics say how many."""
    from skillax.engine.precompile import StageCalls
    from tests.methods.test_engine_updates import _engine

    asked = []

    def stages():
        asked.append(1)
        return [StageCalls("play", rows=(4, 4), distinct=(4, 4), prompt_tokens=(5, 20), max_new_tokens=8)]

    off = _engine(tmp_path, "off")
    assert off.cfg.model.precompile == "false"
    assert off.precompile_sampler(stages) == {} and asked == [] and off.sampler.precompiled == []
    on = _engine(tmp_path, "on")
    on.cfg.model.precompile = "true"
    m = on.precompile_sampler(stages)
    assert asked == [1] and m["compile/precompiled"] == len(on.sampler.precompiled) >= 1
    assert m["compile/precompile_shapes"] >= m["compile/precompiled"] and m["compile/precompile_s"] >= 0
    assert on.precompile_sampler(stages)["compile/precompiled"] == 0      # built once
    on.cfg.model.precompile_max_programs = m["compile/precompile_shapes"] - 1
    before = len(on.sampler.precompiled)
    with pytest.raises(ValueError, match="exceed model.precompile_max_programs"):
        on.precompile_sampler(stages)
    assert len(on.sampler.precompiled) == before                         # nothing built
