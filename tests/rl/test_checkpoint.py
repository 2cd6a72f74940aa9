"""Checkpoints: kill-and-resume identity, keep-last-k, host payload, restore onto another mesh."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from skillax.rl.checkpoint import Checkpointer, pack_dir, unpack_dir
from skillax.rl.data import make_iterator, task_dataset
from skillax.rl.optim import make_optimizer
from skillax.sharding import make_mesh

N_STEPS, KILL_AT = 8, 3
DATA = [{"x": np.full(4, i / 10, np.float32), "y": np.float32(i % 3)} for i in range(11)]


def _init_state():
    k1, k2 = jax.random.split(jax.random.key(0))
    params = {"l1": {"w": jax.random.normal(k1, (4, 16)) * 0.3, "b": jnp.zeros(16)},
              "l2": {"w": jax.random.normal(k2, (16, 1)) * 0.3, "b": jnp.zeros(1)}}
    opt = _opt()
    return {"params": params, "opt_state": opt.init(params), "step": jnp.array(0, jnp.int32),
            "rng": jax.random.key(42)}


def _opt():
    return make_optimizer(3e-2, N_STEPS, warmup_steps=2, weight_decay=0.01)


@jax.jit
def _train_step(state, x, y):
    rng, sub = jax.random.split(state["rng"])

    def loss(p):
        noise = 0.01 * jax.random.normal(sub, x.shape)  # uses the RNG: resume must restore it
        h = jax.nn.gelu((x + noise) @ p["l1"]["w"] + p["l1"]["b"])
        return jnp.mean(((h @ p["l2"]["w"] + p["l2"]["b"])[:, 0] - y) ** 2)
    g = jax.grad(loss)(state["params"])
    upd, opt_state = _opt().update(g, state["opt_state"], state["params"])
    return {"params": optax.apply_updates(state["params"], upd), "opt_state": opt_state,
            "step": state["step"] + 1, "rng": rng}


def _batch(it):
    recs = [next(it) for _ in range(3)]
    return jnp.stack([r["x"] for r in recs]), jnp.stack([r["y"] for r in recs])


def _run(state, it, n, ckpt=None):
    for _ in range(n):
        state = _train_step(state, *_batch(it))
        if ckpt is not None:
            ckpt.save(int(state["step"]), state, host={"data": it.get_state(), "note": "toy"},
                      files={"repo.tgz": b"snapshot-%d" % int(state["step"])})
    return state


def test_kill_and_resume_is_identical(tmp_path):
    # uninterrupted reference
    ref = _run(_init_state(), make_iterator(task_dataset(DATA, seed=7)), N_STEPS)
    # run 1: trains KILL_AT steps, checkpointing each step, then "dies"
    ck = Checkpointer(tmp_path / "ckpt", max_to_keep=2)
    _run(_init_state(), make_iterator(task_dataset(DATA, seed=7)), KILL_AT, ck)
    ck.close()
    del ck
    # run 2: a fresh process-like start: rebuild everything, restore the latest step
    ck = Checkpointer(tmp_path / "ckpt", max_to_keep=2)
    assert ck.latest_step() == KILL_AT and ck.all_steps() == [KILL_AT - 1, KILL_AT]  # keep-last-2
    state, host, files = ck.restore(target=jax.eval_shape(_init_state))
    assert host["note"] == "toy" and files == {"repo.tgz": b"snapshot-3"}
    it = make_iterator(task_dataset(DATA, seed=7))
    it.set_state(host["data"])
    assert int(state["step"]) == KILL_AT
    resumed = _run(state, it, N_STEPS - KILL_AT, ck)
    for a, b in zip(jax.tree.leaves(jax.tree.map(jax.random.key_data, resumed["rng"])),
                    jax.tree.leaves(jax.random.key_data(ref["rng"]))):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(jax.tree.leaves(resumed["params"]), jax.tree.leaves(ref["params"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # bitwise identical
    for a, b in zip(jax.tree.leaves(resumed["opt_state"]), jax.tree.leaves(ref["opt_state"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert ck.latest_step() == N_STEPS
    ck.close()


def test_restore_onto_a_different_mesh(tmp_path):
    mesh8 = make_mesh((1, 8, 1))
    w = jax.device_put(jnp.arange(64 * 8, dtype=jnp.float32).reshape(64, 8), NamedSharding(mesh8, P("fsdp", None)))
    with Checkpointer(tmp_path / "c") as ck:
        ck.save(1, {"params": {"w": w}})
        mesh2x4 = make_mesh((2, 1, 4))
        target_sh = {"params": {"w": NamedSharding(mesh2x4, P(None, "tensor"))}}
        abstract = {"params": {"w": jax.ShapeDtypeStruct((64, 8), jnp.float32)}}
        state, host, files = ck.restore(target=abstract, shardings=target_sh)
        out = state["params"]["w"]
        assert out.sharding == target_sh["params"]["w"] and host == {} and files == {}
        np.testing.assert_array_equal(np.asarray(out), np.asarray(w))
        # onto one device, via a target carrying its sharding
        one = NamedSharding(make_mesh((1, 1, 1), devices=jax.devices()[:1]), P())
        state1, _, _ = ck.restore(1, target={"params": {"w": jax.ShapeDtypeStruct((64, 8), jnp.float32, sharding=one)}})
        assert state1["params"]["w"].sharding == one


def test_errors_and_dir_snapshot(tmp_path):
    ck = Checkpointer(tmp_path / "e")
    assert ck.latest_step() is None
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        ck.restore(target={"a": jnp.zeros(2)})
    with pytest.raises(ValueError, match="must be bytes"):
        ck.save(0, {"a": jnp.zeros(2)}, files={"f": "text"})
    ck.close()
    src = tmp_path / "repo"
    (src / "skills" / "a").mkdir(parents=True)
    (src / "skills" / "a" / "SKILL.md").write_text("---\nname: a\n---\nbody\n")
    (src / "index.json").write_text("{}")
    blob = pack_dir(src)
    assert blob == pack_dir(src)  # deterministic
    dst = unpack_dir(blob, tmp_path / "restored")
    assert (dst / "skills" / "a" / "SKILL.md").read_text() == "---\nname: a\n---\nbody\n"
