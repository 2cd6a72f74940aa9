"""One process of a multi-process CPU run (tests/rl/test_multihost.py launches two of these).

    python -m tests.rl._multihost_worker OUT_DIR ROLE --config.key=value ...

ROLE ``step``: ``skillax.distributed.initialize`` (the run's checks included), one sharded RL
train step of a tiny random model on the global (data, fsdp, tensor) mesh, this process feeding
its own rows of the global batch (``shard_batch``); process 0 writes the updated params
(gathered) and the metrics to OUT_DIR/step.npz. ROLE ``init``: start-up only (the checks).
Errors go to stderr and the exit status is 3.
"""
from __future__ import annotations

import os
import pathlib
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def tiny():
    """The model, batch, params and step config shared with the 1-process reference."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from skillax.models.config import ModelConfig
    from skillax.models.params import abstract_params
    from skillax.rl import train_step as ts
    from skillax.rl.objectives import ObjectiveConfig

    cfg = ModelConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=1, num_heads=4,
                      num_kv_heads=2, head_dim=8, rope_theta=10000.0, qk_norm=True, tie_word_embeddings=False)
    rng = np.random.default_rng(0)
    params = jax.tree_util.tree_map_with_path(
        lambda path, s: np.ones(s.shape, np.float32) if "norm" in jax.tree_util.keystr(path)
        else 0.3 * rng.standard_normal(s.shape, np.float32), abstract_params(cfg))
    B, T = 8, 12
    valid = np.ones((B, T), bool)
    valid[1::2, T - 3:] = False                                  # right padding on odd rows
    mask = valid.copy()
    mask[:, :4] = False                                          # prompt tokens carry no loss
    batch = {"tokens": rng.integers(1, 64, (B, T)).astype(np.int32),
             "positions": np.tile(np.arange(T, dtype=np.int32), (B, 1)), "valid": valid,
             "old_logprobs": np.full((B, T), -4.0, np.float32),
             "objectives": {"policy": {"loss_mask": mask.astype(np.float32),
                                       "advantages": rng.normal(size=B).astype(np.float32)}}}
    tcfg = ts.TrainConfig(objectives=(("policy", ObjectiveConfig(entropy_coef=0.01)),), chunk_size=4,
                          remat=False)
    del jnp
    return cfg, params, batch, tcfg


def sharded_step(mesh, local_batch):
    """One update on ``mesh``: (params as numpy, full arrays; metrics as floats)."""
    import jax
    import optax
    from jax.experimental import multihost_utils

    from skillax.rl import train_step as ts

    cfg, params, _, tcfg = tiny()
    opt = optax.sgd(0.1)
    sh = ts.state_shardings(cfg, opt, mesh)
    state = jax.jit(lambda p: ts.init_train_state(p, opt), out_shardings=sh)(params)
    new, metrics = ts.make_train_step(cfg, opt, tcfg, mesh=mesh)(state, ts.shard_batch(local_batch, mesh))
    if jax.process_count() > 1:
        new = multihost_utils.process_allgather(new["params"], tiled=True)
    else:
        new = new["params"]
    return jax.tree.map(lambda x: __import__("numpy").asarray(x), new), {k: float(v) for k, v in metrics.items()}


def main(argv):
    out, role, overrides = pathlib.Path(argv[1]), argv[2], argv[3:]
    from ml_collections import ConfigDict

    from skillax import config_defaults, distributed

    cfg = config_defaults.base("info")
    cfg.mesh.enabled = "true"
    for o in overrides:                          # --config.a.b=value (values: int, float or str)
        key, value = o.removeprefix("--config.").split("=", 1)
        *path, leaf = key.split(".")
        node = cfg
        for p in path:
            node = node[p]
        node[leaf] = type(node[leaf])(value) if not isinstance(node[leaf], tuple) else \
            tuple(int(x) for x in value.strip("()").split(","))
    assert isinstance(cfg, ConfigDict)
    try:
        distributed.initialize(cfg)
    except (distributed.DistributedError, ValueError) as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 3
    if role == "init":
        return 0
    import jax
    import numpy as np

    from skillax.methods.common.engine import engine_mesh
    from skillax import process

    _, _, batch, _ = tiny()
    mesh = engine_mesh(cfg.mesh)
    n, i = jax.process_count(), jax.process_index()
    rows = batch["tokens"].shape[0] // n
    local = jax.tree.map(lambda x: x[i * rows:(i + 1) * rows], batch)
    params, metrics = sharded_step(mesh, local)
    if process.is_writer():
        flat = {jax.tree_util.keystr(k): v for k, v in jax.tree_util.tree_leaves_with_path(params)}
        np.savez(out / "step.npz", **flat, **{f"metric:{k}": v for k, v in metrics.items()},
                 runtime=repr(distributed.runtime_info(mesh)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
