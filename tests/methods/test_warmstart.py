"""A warm start saved by one process and loaded by another: same weights bit for bit, fresh
optimiser state, frozen copies and files back, incomplete or foreign folders refused."""
import jax
import ml_collections
import numpy as np
import pytest

from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.warmstart import WarmStart, WarmStartError, from_config
from skillax.rl.objectives import ObjectiveConfig
from tests.methods.test_engine_mesh import config, host, rl_batch, tiny_model  # noqa: F401 (fixture)


def _equal(a, b) -> bool:
    la, lb = jax.tree.leaves(host(a)), jax.tree.leaves(host(b))
    return len(la) == len(lb) and all(np.array_equal(x, y) for x, y in zip(la, lb))


def test_save_load_round_trip(tiny_model, tmp_path):  # noqa: F811
    obj = {"policy": ObjectiveConfig()}
    src = PolicyEngine.create(config(tiny_model), tmp_path / "a")
    src.train(rl_batch(src.model_cfg.vocab_size), obj)           # weights differ from the init
    frozen = src.frozen_copy()
    ws = WarmStart(tmp_path / "ws")
    assert not ws.exists()
    ws.save(src, frozen={"executor": frozen}, files={"stream.json": b"[1, 2]"}, summary={"nll_last": 0.5})
    assert ws.exists() and ws.summary()["summary"] == {"nll_last": 0.5}

    dst = PolicyEngine.create(config(tiny_model), tmp_path / "b")
    assert not _equal(dst.state["params"], src.state["params"])
    got_frozen, files, summary = ws.load(dst)
    assert _equal(dst.state["params"], src.state["params"])
    assert _equal(dst.sampler_params, src.sampler_params)
    assert _equal(got_frozen["executor"], frozen)
    assert files == {"stream.json": b"[1, 2]"} and summary == {"nll_last": 0.5}
    assert int(dst.state["step"]) == 0                               # fresh optimiser state
    assert all(float(np.abs(np.asarray(x)).max()) == 0.0 for x in jax.tree.leaves(dst.state["opt_state"])
               if np.asarray(x).dtype == np.float32 and np.asarray(x).ndim > 0)
    dst.train(rl_batch(dst.model_cfg.vocab_size, seed=1), obj)        # and it trains
    src.close(), dst.close()


def test_incomplete_and_foreign_warm_starts_are_refused(tiny_model, tmp_path):  # noqa: F811
    eng = PolicyEngine.create(config(tiny_model), tmp_path / "a")
    (tmp_path / "half" / "policy").mkdir(parents=True)
    with pytest.raises(WarmStartError, match="no complete warm start"):
        WarmStart(tmp_path / "half").load(eng)
    with pytest.raises(WarmStartError, match="not complete after"):
        WarmStart(tmp_path / "half").wait(0.1, poll_s=0.05)
    ws = WarmStart(tmp_path / "ws")
    ws.save(eng)
    other = config(tiny_model)
    other.model.path = "random:qwen3-0.6b"
    eng.cfg = other
    with pytest.raises(WarmStartError, match="saved for model"):
        ws.load(eng)
    assert ws.summary()["think"] is True                             # config() has no play.think
    nothink = config(tiny_model)
    nothink.play = ml_collections.ConfigDict({"think": False})
    eng.cfg = nothink
    with pytest.raises(WarmStartError, match="play.think=True .*this run uses play.think=False"):
        ws.load(eng)                                                 # another answer format
    c = config(tiny_model)
    c.warmstart.save_dir = c.warmstart.load_dir = str(tmp_path / "same")
    with pytest.raises(ValueError, match="same folder"):
        from_config(c)
    eng.close()
