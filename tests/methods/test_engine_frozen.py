"""Frozen weights that survive resume (``PolicyEngine.persistent_frozen``): the KL reference
after a restore is the original pre-update policy, not the restored (trained) weights; a frozen
executor / worker copy is reloaded bit for bit; a fresh run replaces a stale copy."""
import jax
import numpy as np

from skillax.methods.common.engine import PolicyEngine
from skillax.rl.objectives import ObjectiveConfig
from tests.methods.test_engine_mesh import config, host, rl_batch, tiny_model  # noqa: F401 (fixture)


def _equal(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(host(a)), jax.tree.leaves(host(b))))


def test_kl_reference_and_frozen_copies_survive_resume(tiny_model, tmp_path):  # noqa: F811
    work = tmp_path / "run"
    kl = {"policy": ObjectiveConfig(kl_coef=0.1)}
    eng = PolicyEngine.create(config(tiny_model), work)
    V = eng.model_cfg.vocab_size
    initial = host(eng.sampler_params)
    worker = eng.persistent_frozen("worker", reuse=False)
    assert not eng.has_checkpoint() and eng.has_frozen("worker")
    eng.train(rl_batch(V), kl)
    assert _equal(eng.ref_params, initial)          # reference = weights before the first update
    eng.train(rl_batch(V, seed=1), kl)
    eng.save(1)
    trained = host(eng.sampler_params)
    assert not _equal(trained, initial)
    eng.close()

    resumed = PolicyEngine.create(config(tiny_model), work)
    assert resumed.has_checkpoint()
    assert resumed.restore()[0] == 2
    assert _equal(resumed.sampler_params, trained)
    resumed.train(rl_batch(V, seed=2), kl)
    assert _equal(resumed.ref_params, initial)      # not the restored weights
    assert _equal(resumed.persistent_frozen("worker", reuse=True), worker)
    # a fresh (non-resumed) copy replaces the stale one
    fresh = resumed.persistent_frozen("worker", reuse=False)
    assert _equal(fresh, resumed.sampler_params) and not _equal(fresh, worker)
    assert _equal(resumed.persistent_frozen("worker", reuse=True), fresh)
    resumed.close()
