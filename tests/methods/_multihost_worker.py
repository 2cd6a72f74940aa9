"""One process of a 2-process CPU run of the method engines (tests/methods/test_multihost_*.py).

    python -m tests.methods._multihost_worker OUT ROLE MODEL_DIR PORT PROCESS_ID [--config.k=v ...]

Each worker has 4 fake CPU devices (XLA_FLAGS set by the launcher), joins the run on
127.0.0.1:PORT (``skillax.distributed.initialize``, the run's checks included) on the global
(2, 2, 2) mesh, then plays ROLE:

* ``train``: ``PolicyEngine.train`` on this process's own rows (:func:`local_batches`: a
  different row count and padded length on each process, ``scope="local"``), then once more on
  the merged batch (``scope="global"``); process 0 writes the params (gathered) and both
  updates' metrics to OUT/train.npz.
* ``mismatch``: ``train(scope="global")`` with a different batch on each process: the
  DistributedError goes to stderr and the exit status is 3 (on both).
* ``stall``: both write OUT/ready-<i>; process 1 then sleeps (the test kills it) while
  process 0 enters ``train`` under ``distributed.run_guarded`` (the CLI's guard): it must
  exit with status 3 and a one-line DistributedError, within ``distributed.timeout_s``.
* ``skill1``: ``modes.run`` of the tiny Skill1 config (:func:`skill1_config`);
  OUT/run is the workdir both processes share (its checkpoint holds the params).
* ``skillos``: the same with the tiny SkillOS config (:func:`skillos_config`).
* ``skill_alpha``: the same with the tiny Skill-alpha config (:func:`skill_alpha_config`).

Errors of the start-up checks -- and a method's refusal of what it does not run on several
processes (NotImplementedError) -- go to stderr with exit status 3.
"""
from __future__ import annotations

import os
import pathlib
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if os.environ.get("WORKER_DUMP_S"):          # debugging a hang: every thread's stack after N s
    import faulthandler
    faulthandler.dump_traceback_later(int(os.environ["WORKER_DUMP_S"]), exit=True)

MESH = (2, 2, 2)


def local_batches(vocab: int):
    """Process 0's and process 1's own rows (``build_batch`` format): 3 rows padded to 32 and
    2 rows padded to 16 (buckets (16, 32)); merged: 5 real rows of lengths 12, 14, 30, 10, 16."""
    import numpy as np

    def make(lengths, T, episodes, seed):
        rng = np.random.default_rng(seed)
        B = len(lengths)
        valid = np.arange(T)[None, :] < np.asarray(lengths)[:, None]
        mask = valid & (np.arange(T)[None, :] >= 6)                 # 6 prompt tokens per row
        return {"tokens": np.where(valid, rng.integers(3, vocab, (B, T)), 0).astype(np.int32),
                "positions": np.tile(np.arange(T, dtype=np.int32), (B, 1)), "valid": valid,
                "old_logprobs": np.where(mask, -9.0, 0.0).astype(np.float32),
                "objectives": {"util": {"loss_mask": mask.astype(np.float32),
                                        "advantages": rng.normal(size=B).astype(np.float32)}},
                "num_rows": B, "dropped_truncated": 0, "episodes": np.asarray(episodes, np.int32)}
    return [make([12, 14, 30], 32, [0, 0, 1], 0), make([10, 16], 16, [0, 1], 1)]


def engine_config(model_dir: str):
    """The engine config of the ``train`` roles and their 1-process reference."""
    from tests.methods.test_skillos_integration import tiny_config

    c = tiny_config(model_dir)
    c.train.micro_batch = 4
    c.train.length_buckets = (16, 32)
    c.train.lr = 1e-3
    c.train.update_layout = "buckets"
    c.mesh.enabled = "true"
    c.mesh.shape = MESH
    return c


def objectives():
    from skillax.rl.objectives import ObjectiveConfig
    return {"util": ObjectiveConfig(entropy_coef=0.01)}


def train_twice(engine, own, merged, scope_first="local"):
    """Two updates: ``own`` rows with ``scope_first``, then the merged batch globally."""
    m1 = engine.train(own, objectives(), scope=scope_first)
    m2 = engine.train(merged, objectives(), scope="global")
    return m1, m2


def gathered_params(engine):
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    p = engine.state["params"]
    if jax.process_count() > 1:
        p = multihost_utils.process_allgather(p, tiled=True)
    return {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_leaves_with_path(p)}


def skill1_config(model_dir: str):
    """2 steps x 2 tasks x 2 rollouts; the task text retrieves (w/o Selection, threshold -1) so
    every episode reads the seeded library and its utilities move; 2 eval games. Rows are
    <= ~300 tokens: ``model.max_len`` 384 and one 384 training bucket (a 1024 bucket, as
    ``skill1_tiny_config`` had then, made the updates most of the test's time)."""
    from tests.methods.test_skill1_contract import skill1_tiny_config
    from tests.methods.test_skills_wiring import HANDWRITTEN

    c = skill1_tiny_config(model_dir, steps=2)
    c.tasks_per_step = 2
    c.init_skills = str(HANDWRITTEN)
    c.ablation = "no_selection"
    c.rollout.threshold = -1.0
    c.rollout.top_k = 3
    c.train.micro_batch = 4                       # a multiple of data x fsdp = 4
    c.model.max_len = 384
    c.train.length_buckets = (384,)
    c.eval.n_tasks = 2
    c.eval.splits = "valid_seen"
    c.eval.batch_size = 0
    c.env.workers = 1
    c.mesh.enabled = "true"
    c.mesh.shape = (2, 2, 2)
    return c


def skillos_config(model_dir: str):
    """1 step of 2 groups (one per process; the train split's one group of 2 TextWorld games,
    drawn twice) x 2 rollouts, repos seeded with the hand-written skills: 8 curator rows, each
    ~1016 tokens (the curator's system prompt alone is ~900: the rows cannot be shorter, and a
    second step would cost ~40 % more; two 2-process updates in a row are
    test_multihost_train's, a resumed second step test_multihost_skill1's); a real update
    (``tiny_config``'s ``rl.skip_no_signal = False``: a random curator's advantages may all
    be 0); evaluation of no_memory (2 games: one per process) and curated (1 group: process 1
    runs none) on one split."""
    from tests.methods.test_skillos_integration import tiny_config
    from tests.methods.test_skills_wiring import HANDWRITTEN

    c = tiny_config(model_dir, steps=1)
    c.init_skills = str(HANDWRITTEN)              # every repo starts with 6 skills: retrieval from task 1
    c.groups_per_step = 2
    c.tasks_per_group = 2
    c.train.micro_batch = 4                       # a multiple of data x fsdp = 4
    c.eval.splits = "valid_train"
    c.eval.conditions = "no_memory,curated"
    c.eval.batch_size = 0
    c.env.workers = 1
    c.mesh.enabled = "true"
    c.mesh.shape = MESH
    return c


def skill_alpha_config(model_dir: str):
    """1 RL step of 2 lanes (one per process: its editor rows and its control game) x 2 edit
    candidates on the 2-chunk stream of real TextWorld games (2 evidence games, 2 anchors;
    ``test_skill_alpha_integration.tiny_config``), no SFT, a real update on 4 rows, inference
    over the stream (z_T's folder) and the held-out evaluation of no_skill / with_skill on 1
    game (2 episodes: one per process, the control games' sampler shapes). Editor rows fit one
    384-token training bucket. Environments in-process (``env.workers = 0``)."""
    from tests.methods.test_skill_alpha_integration import tiny_config

    c = tiny_config(model_dir)
    c.steps = 1
    c.lanes = 2
    c.unit.group_size = 2
    c.train.micro_batch = 4                       # a multiple of data x fsdp = 4
    c.evidence.max_traj_chars = 100
    c.evidence.max_prompt_tokens = 372            # + unit.max_new_tokens 12 = the 384 bucket
    c.train.length_buckets = (384,)
    c.eval.n_tasks = 1
    c.eval.conditions = "no_skill,with_skill"     # also after a loaded warm start (default: with_skill)
    c.eval.batch_size = 0
    c.env.workers = 0
    c.mesh.enabled = "true"
    c.mesh.shape = MESH
    return c


def _override(cfg, o):
    key, value = o.removeprefix("--config.").split("=", 1)
    *path, leaf = key.split(".")
    node = cfg
    for p in path:
        node = node[p]
    old = node[leaf]
    node[leaf] = (tuple(int(x) for x in value.strip("()").split(",")) if isinstance(old, tuple)
                  else (value.lower() == "true") if isinstance(old, bool) else type(old)(value))


def main(argv):
    out, role, model_dir, port, pid, overrides = (pathlib.Path(argv[1]), argv[2], argv[3], int(argv[4]),
                                                  int(argv[5]), argv[6:])
    from skillax import distributed, process

    if role == "skill1":
        cfg = skill1_config(model_dir)
    elif role == "skillos":
        cfg = skillos_config(model_dir)
    elif role == "skill_alpha":
        cfg = skill_alpha_config(model_dir)
    else:
        cfg = engine_config(model_dir)
    cfg.distributed.update(dict(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=pid,
                                timeout_s=30.0))
    cfg.mesh.enabled, cfg.mesh.shape = "true", MESH
    for o in overrides:
        _override(cfg, o)
    try:
        distributed.initialize(cfg)
    except (distributed.DistributedError, ValueError) as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 3
    import numpy as np

    if role in ("skill1", "skillos", "skill_alpha"):
        from skillax import modes
        try:
            distributed.run_guarded(modes.run, cfg, str(out / "run"))     # as the CLI runs it
        except NotImplementedError as e:
            print(f"NotImplementedError: {e}", file=sys.stderr)
            return 3
        return 0

    from skillax.methods.common.engine import PolicyEngine
    from skillax.rl.global_batch import merge_local_batches

    engine = PolicyEngine.create(cfg, out / f"w{pid}")
    own = local_batches(engine.model_cfg.vocab_size)
    merged = merge_local_batches(own, rows_multiple=4, length_buckets=(16, 32))
    if role == "stall":                     # process 1 stops before the step (the test kills it)
        import time
        (out / f"ready-{pid}").write_text("")
        if pid == 1:
            time.sleep(600)
        distributed.run_guarded(engine.train, merged, objectives(), scope="global")   # exits 3
        return 0
    if role == "mismatch":
        try:
            engine.train(own[pid], objectives(), scope="global")
        except distributed.DistributedError as e:
            print(f"DistributedError: {e}", file=sys.stderr)
            return 3
        return 0
    m1, m2 = train_twice(engine, own[pid], merged)
    params = gathered_params(engine)
    if process.is_writer():
        np.savez(out / "train.npz", **params, **{f"m1:{k}": v for k, v in m1.items()},
                 **{f"m2:{k}": v for k, v in m2.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
