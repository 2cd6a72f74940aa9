"""``PolicyEngine`` on a device mesh (8 fake CPU devices, tests/conftest.py): the mesh rule of
``config.mesh``, a sharded SFT + RL update equal to the single-device one, greedy sampling
from the sharded weights equal to the single-device sampler, and checkpoints restored across
meshes (sharded -> one device -> another mesh) bit for bit."""
import jax
import numpy as np
import pytest

from skillax.methods.common.engine import PolicyEngine, batch_shards, engine_mesh
from skillax.rl.objectives import ObjectiveConfig
from tests.methods.test_skillos_integration import _tiny_model_dir, tiny_config

needs_8 = pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 (fake) devices: tests/conftest.py sets them")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return _tiny_model_dir(str(tmp_path_factory.mktemp("model")))


def config(model, shape=None, enabled="false", micro_batch=4):
    c = tiny_config(model)
    c.train.micro_batch = micro_batch
    c.train.length_buckets = (32,)
    c.train.lr = 1e-4                        # a visible update
    c.mesh.enabled = enabled
    if shape is not None:
        c.mesh.shape = shape
    return c


def host(tree):
    return jax.tree.map(lambda x: np.asarray(jax.device_get(x)), tree)


def rl_batch(vocab, B=8, T=32, seed=0):
    rng = np.random.default_rng(seed)
    valid = np.ones((B, T), bool)
    valid[1::2, T - 5:] = False                            # some right padding
    mask = valid.copy()
    mask[:, :10] = False                                   # prompt tokens
    return {"tokens": rng.integers(3, vocab, (B, T)).astype(np.int32),
            "positions": np.tile(np.arange(T, dtype=np.int32), (B, 1)), "valid": valid,
            "old_logprobs": np.full((B, T), -9.0, np.float32),
            "objectives": {"policy": {"loss_mask": mask.astype(np.float32),
                                      "advantages": rng.normal(size=B).astype(np.float32)}}}


def sft_batches(vocab, B=8, T=32):
    rng = np.random.default_rng(1)
    mask = np.ones((B, T), np.float32)
    mask[:, :4] = 0
    b = {"tokens": rng.integers(3, vocab, (B, T)).astype(np.int32),
         "positions": np.tile(np.arange(T, dtype=np.int32), (B, 1)), "valid": np.ones((B, T), bool),
         "loss_mask": mask}
    while True:
        yield b


@needs_8
def test_mesh_rule_and_bad_shapes(tiny_model):
    from ml_collections import ConfigDict

    assert engine_mesh(ConfigDict({"shape": (1, -1, 1), "enabled": "false"})) is None
    assert engine_mesh(ConfigDict({"shape": (1, -1, 1), "enabled": "auto"})) is None   # CPU fake devices
    m = engine_mesh(ConfigDict({"shape": (2, 2, 2), "enabled": "true"}))
    assert dict(m.shape) == {"data": 2, "fsdp": 2, "tensor": 2} and batch_shards(m) == 4
    with pytest.raises(ValueError, match="needs 6 devices"):
        engine_mesh(ConfigDict({"shape": (1, 3, 2), "enabled": "true"}))
    with pytest.raises(ValueError, match="auto | true | false"):
        engine_mesh(ConfigDict({"shape": (1, -1, 1), "enabled": "yes"}))
    with pytest.raises(ValueError, match="multiple of the batch shards"):
        PolicyEngine.create(config(tiny_model, (1, 8, 1), "true", micro_batch=4), "/tmp/unused-mesh-engine")


@needs_8
def test_sharded_engine_equals_single_device_and_restores_across_meshes(tiny_model, tmp_path):
    from skillax.engine.sampling import SamplingParams

    c8 = config(tiny_model, (1, 4, 2), "true")
    c8.rl.objective_grad_norms_every = 1      # the per-objective norm on the mesh too
    single = PolicyEngine.create(config(tiny_model), tmp_path / "single")
    sharded = PolicyEngine.create(c8, tmp_path / "sharded")
    assert single.mesh is None and dict(sharded.mesh.shape) == {"data": 1, "fsdp": 4, "tensor": 2}
    emb = sharded.state["params"]["embed"]
    assert len(emb.sharding.device_set) == 8 and not emb.sharding.is_fully_replicated
    np.testing.assert_array_equal(host(single.state["params"]["embed"]), host(emb))

    V = single.model_cfg.vocab_size
    for eng in (single, sharded):
        eng.sft(sft_batches(V), lr=1e-4, steps=1)
        eng.m = eng.train(rl_batch(V), {"policy": ObjectiveConfig()})
    assert sharded.m["loss"] == pytest.approx(single.m["loss"], rel=1e-5, abs=1e-7)
    assert sharded.m["grad_norm"] == pytest.approx(single.m["grad_norm"], rel=1e-4)
    # one objective: its part is the whole loss (the sharded grad steps and norm vs the update)
    assert sharded.m["grad_norm_policy"] == pytest.approx(sharded.m["grad_norm"], rel=1e-5)
    assert "grad_norm_policy" not in single.m                  # off by default
    a, b = host(single.state["params"]), host(sharded.state["params"])
    moved = host(PolicyEngine.create(config(tiny_model), tmp_path / "init").state["params"])
    assert not np.allclose(a["embed"], moved["embed"])                     # the updates did something
    # Adam moves every weight by ~lr per step; a weight whose gradient is ~0 can move differently
    # under another reduction order (a one-in-a-million element did at lr 1e-3): atol 0.3 lr
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=2e-5, atol=3e-5), a, b)
    assert sharded.sampler_params["embed"].sharding == sharded.state["params"]["embed"].sharding

    prompts = [[5, 6, 7, 8, 9], [10, 11, 12], [13, 14, 15, 16], [17, 18]]
    sp = SamplingParams(temperature=0.0, max_new_tokens=6, eos_ids=[])
    out_1 = single.sampler.generate(single.sampler_params, prompts, sp)
    out_8 = sharded.sampler.generate(sharded.sampler_params, prompts, sp)
    np.testing.assert_array_equal(out_1.tokens, out_8.tokens)

    # checkpoint written on the (1, 4, 2) mesh -> restored on one device and on (2, 2, 2)
    sharded.save(0, host={"note": "mesh"})
    sharded.checkpointer.wait()
    saved = host(sharded.state)
    for shape, enabled in ((None, "false"), ((2, 2, 2), "true")):
        c = config(tiny_model, shape, enabled)
        other = PolicyEngine(*_load(c), c, tmp_path / "sharded")
        start, payload, _ = other.restore()
        assert start == 1 and payload["note"] == "mesh"
        got = other.state
        jax.tree.map(np.testing.assert_array_equal, saved, host(got))
        if shape is not None:
            assert dict(got["params"]["embed"].sharding.mesh.shape) == {"data": 2, "fsdp": 2, "tensor": 2}
        else:
            assert len(got["params"]["embed"].sharding.device_set) == 1
        other.close()
    for eng in (single, sharded):
        eng.close()


def _load(cfg):
    from skillax.models.registry import load_policy

    return load_policy(cfg.model.path, "float32", seed=int(cfg.seed))
