"""Restore a method run's latest checkpoint onto several meshes and check the states are equal.

    python benchmarks/cross_mesh_restore.py --config configs/skill1_alfworld_gpu.py --workdir runs/x \
        --meshes 1,2,1 none

Issue 10: a run trained on a multi-GPU mesh must restore onto one GPU with identical
parameters. For each placement (``none`` = one device, else a (data, fsdp, tensor) shape over
all devices, -1 filling) a ``PolicyEngine`` of the run's config is built and
``restore()``d; every leaf of the train state (fp32 params, Adam moments, step) is fetched to
the host and compared bit for bit with the first placement's. Prints one JSON line per
placement (step, leaves, bytes, sha256 of all leaves, devices of the embedding) and appends
them to benchmarks/results/cross_mesh_restore.jsonl ($SKILLAX_RESULTS). Exit status 1 on any
difference.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import record  # noqa: E402


def load_config(path: str):
    spec = importlib.util.spec_from_file_location("run_config", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config()


def restored_state(cfg, workdir: str, placement: str):
    """(step, host state, embedding devices) of the latest checkpoint under ``workdir``."""
    from skillax.methods.common.engine import PolicyEngine

    cfg = cfg.copy_and_resolve_references()
    if placement == "none":
        cfg.mesh.enabled = "false"
    else:
        cfg.mesh.enabled = "true"
        cfg.mesh.shape = tuple(int(x) for x in placement.split(","))
    with jax.default_device(jax.devices()[0]):
        engine = PolicyEngine.create(cfg, workdir)
        start, _, _ = engine.restore()
        if start == 0:
            raise SystemExit(f"no checkpoint under {workdir}/checkpoints: nothing to compare")
        state = jax.tree.map(lambda x: np.asarray(jax.device_get(x)), engine.state)
        devices = sorted(d.id for d in engine.state["params"]["embed"].sharding.device_set)
        engine.close()
    return start - 1, state, devices


def digest(state) -> tuple[int, int, str]:
    h, n, size = hashlib.sha256(), 0, 0
    for leaf in jax.tree.leaves(state):
        a = np.ascontiguousarray(leaf)
        h.update(a.tobytes())
        n += 1
        size += a.nbytes
    return n, size, h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--meshes", nargs="+", default=["1,-1,1", "none"])
    a = ap.parse_args()
    cfg = load_config(a.config)
    first, ok = None, True
    for placement in a.meshes:
        step, state, devices = restored_state(cfg, a.workdir, placement)
        leaves, nbytes, sha = digest(state)
        equal = True
        if first is None:
            first = state
        else:
            equal = all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(first), jax.tree.leaves(state)))
            ok &= equal
        record("cross_mesh_restore", "restore", {"placement": placement, "workdir": a.workdir}, float(equal),
               None, "1 = equal to the first placement", 1.0, float(equal), step=step, leaves=leaves,
               bytes=nbytes, sha256=sha, embed_devices=devices)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
