"""KV-cache forward equals the cache-free forward; sharded forward equals unsharded."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax import sharding
from skillax.models import params as params_lib
from skillax.models import transformer
from skillax.models.config import ModelConfig
from skillax.models.kv_cache import init_cache

CFG = ModelConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4,
                  num_kv_heads=2, head_dim=16, rope_theta=10000.0, qk_norm=True)


def _logits(p, cfg, tokens, positions, valid, cache=None, cache_loop="auto", **kw):
    h, cache = transformer.forward(p, cfg, tokens, positions, valid, cache, cache_loop=cache_loop, **kw)
    return np.asarray(transformer.logits(p, cfg, h)), cache


@pytest.mark.parametrize("cache_loop,fresh,cache_attn,T,S", [
    ("unroll", False, "xla", 7, 16), ("scan", False, "xla", 7, 16), ("scan", True, "xla", 7, 16),
    # a 32-token prompt in 64 slots: the Pallas kernel runs the prefill chunk and the decode steps
    ("scan", False, "pallas", 32, 64), ("scan", True, "pallas", 32, 64)])
def test_cached_prefill_then_decode_matches_full_forward(cache_loop, fresh, cache_attn, T, S):
    """Left-padded prompt prefilled into the cache, then 3 decode steps, equal the cache-free
    forward over the whole sequence; ``fresh=True`` (attend within the chunk, no stacked cache
    copy) gives the same as attending over the (empty) cache."""
    p = params_lib.init_params(CFG, jax.random.key(0))
    rng = np.random.default_rng(0)
    lengths = [5, 2, T]
    B = len(lengths)
    # left-padded prompt + 3 more tokens appended one at a time
    prompt = np.zeros((B, T), np.int32)
    pvalid = np.zeros((B, T), bool)
    for b, n in enumerate(lengths):
        prompt[b, T - n:] = rng.integers(1, 256, n)
        pvalid[b, T - n:] = True
    extra = rng.integers(1, 256, (B, 3)).astype(np.int32)
    full_tok = np.concatenate([prompt, extra], 1)
    full_valid = np.concatenate([pvalid, np.ones((B, 3), bool)], 1)
    full_pos = np.maximum(np.cumsum(full_valid, 1) - 1, 0).astype(np.int32)
    ref, _ = _logits(p, CFG, full_tok, full_pos, full_valid)

    cache = init_cache(CFG, B, S, jnp.float32)
    got, cache = _logits(p, CFG, prompt, full_pos[:, :T], pvalid, cache, cache_loop, fresh=fresh,
                         cache_attn=cache_attn)
    outs = [got]
    for i in range(3):
        step, cache = _logits(p, CFG, extra[:, i:i + 1], full_pos[:, T + i:T + i + 1],
                              np.ones((B, 1), bool), cache, cache_loop, cache_attn=cache_attn)
        outs.append(step)
    got = np.concatenate(outs, 1)
    np.testing.assert_allclose(got[full_valid], ref[full_valid], atol=2e-5)
    assert int(cache.index) == T + 3


@pytest.mark.parametrize("mesh_shape", [(1, 8, 1), (1, 4, 2), (1, 2, 4), (2, 2, 2)])
def test_sharded_forward_equals_unsharded(mesh_shape):
    if len(jax.devices()) < 8:
        pytest.skip("needs 8 (fake) devices: XLA_FLAGS=--xla_force_host_platform_device_count=8")
    mesh = sharding.make_mesh(mesh_shape)
    ref_p = params_lib.init_params(CFG, jax.random.key(1))
    sh_p = params_lib.init_params(CFG, jax.random.key(1), mesh=mesh)
    # every weight carries the PartitionSpec its logical-axis rule says
    axes = params_lib.logical_axes(CFG)
    for path, leaf in jax.tree_util.tree_leaves_with_path(sh_p):
        logical = axes
        for k in path:
            logical = logical[k.key]
        assert leaf.sharding.spec == sharding.DEFAULT_RULES.spec(logical), path
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 256, (8, 12)).astype(np.int32)
    valid = np.ones_like(tokens, bool)
    valid[3, 9:] = False
    pos = np.broadcast_to(np.arange(12, dtype=np.int32), tokens.shape)
    ref, _ = _logits(ref_p, CFG, tokens, pos, valid)
    bs = sharding.batch_sharding(mesh)
    args = [jax.device_put(x, bs) for x in (tokens, pos, valid)]
    fwd = jax.jit(lambda p, t, q, v: transformer.logits(p, CFG, transformer.forward(p, CFG, t, q, v)[0]))
    got = np.asarray(fwd(sh_p, *args))
    np.testing.assert_allclose(got, ref, atol=2e-5)
    # the sampler's GPU prefill: layers scanned, a fresh cache, attention within the chunk
    cached = jax.jit(lambda p, t, q, v: transformer.logits(p, CFG, transformer.forward(
        p, CFG, t, q, v, init_cache(CFG, 8, 16, jnp.float32), cache_loop="scan", fresh=True)[0]))
    np.testing.assert_allclose(np.asarray(cached(sh_p, *args))[valid], ref[valid], atol=2e-5)


def test_make_mesh_errors():
    with pytest.raises(ValueError, match="needs"):
        sharding.make_mesh((3, 1, 1))


def test_constrain_pins_activation_sharding_only_under_a_mesh():
    if len(jax.devices()) < 8:
        pytest.skip("needs 8 (fake) devices: XLA_FLAGS=--xla_force_host_platform_device_count=8")
    x = jnp.zeros((8, 3, 4, 2))
    f = jax.jit(lambda x: sharding.constrain(x, ("batch", None, "heads", None)))
    assert f(x).sharding.is_fully_replicated or len(f(x).sharding.device_set) == 1      # no mesh: no-op
    mesh = sharding.make_mesh((1, 4, 2))
    with jax.set_mesh(mesh):
        y = f(x)
        # H = 3 is not divisible by tensor = 2: left replicated, not an error
        z = jax.jit(lambda x: sharding.constrain(x, ("batch", None, "heads", None)))(jnp.zeros((8, 3, 3, 2)))
    want = lambda *spec: jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))  # noqa: E731
    assert y.sharding.is_equivalent_to(want(("data", "fsdp"), None, "tensor", None), 4)
    assert z.sharding.is_equivalent_to(want(("data", "fsdp"), None, None, None), 4)
    assert not z.sharding.is_equivalent_to(want(None, None, None, None), 4)
