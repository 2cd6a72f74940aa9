"""Multi-process runs on JAX's multi-controller runtime (issue 21): start-up and its checks.

One process per host (TPU pod worker, GPU node, or -- for tests -- several processes on one
CPU machine), each driving its local devices; ``jax.devices()`` then lists the devices of
every process and the engines' ("data", "fsdp", "tensor") mesh spans them all.
:func:`initialize` runs in ``skillax.main`` before any other JAX use and, when
``config.distributed`` turns it on, fails on **every** process before any training for:

* a coordinator that cannot be reached within ``distributed.timeout_s`` (clear error, no hang);
* configs that differ between processes (sha256 of the config, per-process keys left out,
  compared with an all-gather: :func:`config_digest`, :func:`check_same_config`);
* a mesh whose batch shards (data x fsdp) the process count does not divide (each process
  feeds an equal share of a step's rows: :func:`check_mesh`).

``distributed.enabled = "false"`` (or False) is the single-process behaviour exactly: nothing
here calls into JAX. Global batches: ``rl.train_step.shard_batch`` (process-local rows ->
global arrays). Outputs are written by process 0 only (``skillax.process.is_writer``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import sys
import time
from typing import Mapping, Sequence

from skillax import process

# per-process settings: they differ between the processes of one run by design
PER_PROCESS_KEYS = ("process_id", "local_device_ids")
ISSUE = "issue 21"


class DistributedError(RuntimeError):
    """A multi-process start-up that cannot go on (message says why and what to do)."""


def auto_enabled(dcfg: Mapping, environ: Mapping[str, str] = os.environ) -> bool:
    """``enabled = "auto"``: on when a coordinator is named (``distributed.coordinator_address``
    or ``JAX_COORDINATOR_ADDRESS``), on a multi-host TPU slice (``TPU_WORKER_HOSTNAMES`` /
    ``TPU_PROCESS_ADDRESSES`` list more than one host), under Slurm with more than one task
    (``SLURM_NTASKS``) or Open MPI with more than one rank (``OMPI_COMM_WORLD_SIZE``)."""
    if str(dcfg.get("coordinator_address", "") or environ.get("JAX_COORDINATOR_ADDRESS", "")):
        return True
    for key in ("TPU_PROCESS_ADDRESSES", "TPU_WORKER_HOSTNAMES"):
        if len([h for h in environ.get(key, "").split(",") if h.strip()]) > 1:
            return True
    for key in ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"):
        if environ.get(key, "").strip().isdigit() and int(environ[key]) > 1:
            return True
    return False


def _device_ids(value) -> list[int] | None:
    if value in (None, "", ()):
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    try:
        return [int(x) for x in items]
    except ValueError:
        raise ValueError(f"distributed.local_device_ids must be ints like '0,1', got {value!r}") from None


def resolve(dcfg: Mapping | bool | None, environ: Mapping[str, str] = os.environ) -> dict | None:
    """``config.distributed`` -> keyword arguments of ``jax.distributed.initialize``, or None
    when the run is single-process (enabled false, or auto with no launcher detected).

    Unset keys ("" / 0 / -1) are left to JAX's cluster detection (TPU, Slurm, Open MPI,
    ``JAX_*`` variables). Raises ValueError for a bad ``enabled`` value, negative counts, or
    ``process_id >= num_processes``.
    """
    if dcfg is None or isinstance(dcfg, bool):            # old configs: distributed = False/True
        dcfg = {"enabled": "true" if dcfg else "false"}
    enabled = str(dcfg.get("enabled", "auto")).lower()
    if enabled not in ("auto", "true", "false"):
        raise ValueError(f"config.distributed.enabled must be auto | true | false, got {enabled!r}")
    if enabled == "false" or (enabled == "auto" and not auto_enabled(dcfg, environ)):
        return None
    n, pid = int(dcfg.get("num_processes", 0)), int(dcfg.get("process_id", -1))
    if n < 0 or pid < -1:
        raise ValueError(f"distributed.num_processes ({n}) must be >= 0 (0 = detect) and "
                         f"distributed.process_id ({pid}) >= -1 (-1 = detect)")
    if n and pid >= n:
        raise ValueError(f"distributed.process_id={pid} must be < distributed.num_processes={n}")
    timeout = float(dcfg.get("timeout_s", 60.0))
    if timeout <= 0:
        raise ValueError(f"distributed.timeout_s must be > 0, got {timeout}")
    return {"coordinator_address": str(dcfg.get("coordinator_address", "")) or None,
            "num_processes": n or None, "process_id": None if pid < 0 else pid,
            "local_device_ids": _device_ids(dcfg.get("local_device_ids", "")),
            "initialization_timeout": max(int(math.ceil(timeout)), 1)}


def wait_for_coordinator(address: str, timeout_s: float) -> None:
    """Block until a TCP connection to ``host:port`` succeeds; DistributedError after
    ``timeout_s`` seconds. Run by processes other than 0 before JAX connects, so an
    unreachable coordinator is a clear error within the bound on every such process."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        raise ValueError(f"distributed.coordinator_address must be host:port, got {address!r}")
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, int(port)), timeout=min(2.0, timeout_s)):
                return
        except OSError as e:
            last = e
            time.sleep(0.2)
    raise DistributedError(
        f"the coordinator {address} was not reachable within distributed.timeout_s={timeout_s:g} s "
        f"({last}). Start process 0 with the same --config.distributed.coordinator_address, check "
        "the host name and that the port is open between the hosts.")


def config_digest(cfg) -> str:
    """sha256 (hex) of the config as JSON, without the per-process keys
    (:data:`PER_PROCESS_KEYS` of ``config.distributed``) -- equal on the processes of one run."""
    tree = json.loads(cfg.to_json_best_effort(sort_keys=True)) if hasattr(cfg, "to_json_best_effort") else dict(cfg)
    dist = tree.get("distributed")
    if isinstance(dist, dict):
        tree["distributed"] = {k: v for k, v in dist.items() if k not in PER_PROCESS_KEYS}
    return hashlib.sha256(json.dumps(tree, sort_keys=True, default=str).encode()).hexdigest()


def check_same_config(cfg) -> None:
    """All-gather every process's :func:`config_digest`; DistributedError on every process when
    they differ (names which processes hold which digest)."""
    import numpy as np
    from jax.experimental import multihost_utils

    mine = np.frombuffer(bytes.fromhex(config_digest(cfg)), dtype=np.int32)       # (8,)
    every = np.asarray(multihost_utils.process_allgather(mine))                     # (P, 8)
    digests = [row.astype(np.int32).tobytes().hex()[:12] for row in every]
    if len(set(digests)) > 1:
        listing = ", ".join(f"process {i}: {d}" for i, d in enumerate(digests))
        raise DistributedError(
            f"the processes were started with different configs ({listing}; sha256 prefixes of the "
            "config without distributed.process_id/local_device_ids). Launch every process with the "
            "same --config file and the same overrides.")


def mesh_shape(shape: Sequence[int], device_count: int) -> tuple[int, int, int]:
    """``config.mesh.shape`` with its -1 filled for ``device_count`` devices (ValueError when
    it does not fit; the same rule as ``sharding.make_mesh``)."""
    shape = [int(s) for s in shape]
    if len(shape) != 3 or shape.count(-1) > 1:
        raise ValueError(f"config.mesh.shape must be 3 sizes (data, fsdp, tensor), at most one -1: {shape}")
    if -1 in shape:
        shape[shape.index(-1)] = device_count // max(math.prod(s for s in shape if s != -1), 1)
    if math.prod(shape) != device_count:
        raise ValueError(f"config.mesh.shape {tuple(shape)} needs {math.prod(shape)} devices, "
                         f"the {device_count} devices of all processes are there")
    return tuple(shape)


def check_mesh(mesh_cfg: Mapping, num_processes: int, device_count: int) -> tuple[int, int, int]:
    """Raise ValueError unless the mesh spans every process's devices and its batch shards
    (data x fsdp) are a multiple of ``num_processes`` (each process feeds its rows to its own
    devices). Returns the resolved (data, fsdp, tensor)."""
    if str(mesh_cfg.get("enabled", "auto")).lower() == "false":
        raise ValueError(f"config.mesh.enabled=false cannot run {num_processes} processes: the engines "
                         "need one mesh over every process's devices (use auto or true)")
    shape = mesh_shape(mesh_cfg.get("shape", (1, -1, 1)), device_count)
    if (shape[0] * shape[1]) % num_processes:
        raise ValueError(f"{num_processes} processes do not divide the batch shards data x fsdp = "
                         f"{shape[0] * shape[1]} of config.mesh.shape {shape}: every process must feed "
                         "an equal share of a step's rows (move devices from tensor to data/fsdp)")
    return shape


def local_mesh_shape(global_shape: Sequence[int], num_processes: int) -> tuple[int, int, int]:
    """The (data, fsdp, tensor) shape of one process's share of the global mesh: the tensor
    axis kept, the batch axes divided by the process count (data first, then fsdp). Used for
    the per-process sampler replica (``PolicyEngine``). ValueError when the process count does
    not divide data x fsdp (:func:`check_mesh` rejects such a mesh at start-up)."""
    d, f, t = (int(x) for x in global_shape)
    if (d * f) % num_processes:
        raise ValueError(f"{num_processes} processes do not divide data x fsdp = {d * f} of mesh {(d, f, t)}")
    g = math.gcd(d, num_processes)
    return d // g, f // (num_processes // g), t


def initialize(cfg) -> bool:
    """Start JAX's distributed runtime when ``cfg.distributed`` asks for it (module docstring),
    then check the coordinator, the configs and the mesh. Call before any other JAX use.
    Returns True when the run is multi-process (also for one process under a launcher)."""
    kwargs = resolve(cfg.get("distributed"))
    if kwargs is None:
        return False
    import jax

    dcfg = cfg.distributed
    timeout = float(dcfg.get("timeout_s", 60.0))
    if kwargs["coordinator_address"] and kwargs["process_id"] not in (None, 0):
        wait_for_coordinator(kwargs["coordinator_address"], timeout)
    jax.config.update("jax_cpu_collectives_implementation", str(dcfg.get("cpu_collectives", "gloo")))
    # JAX ends the process itself (a fatal DEADLINE_EXCEEDED, no Python exception) when not every
    # process joins in time: say beforehand what that would mean
    print(f"skillax.distributed: joining {kwargs['num_processes'] or 'the detected'} processes at "
          f"{kwargs['coordinator_address'] or 'the detected coordinator'} (process "
          f"{kwargs['process_id'] if kwargs['process_id'] is not None else 'detected'}); a DEADLINE_EXCEEDED "
          f"termination after {timeout:g} s means some process did not start or cannot reach it",
          file=sys.stderr, flush=True)
    try:
        # timeout_s also bounds how long a dead peer goes unnoticed (heartbeats) and the shutdown
        jax.distributed.initialize(**kwargs, shutdown_timeout_seconds=kwargs["initialization_timeout"],
                                   heartbeat_timeout_seconds=max(kwargs["initialization_timeout"], 10))
    except Exception as e:   # noqa: BLE001 -- JAX raises runtime-specific types; say what to check
        raise DistributedError(f"jax.distributed.initialize({kwargs}) failed: {e}. Check "
                               "distributed.coordinator_address / num_processes / process_id") from e
    process.set_process(jax.process_index(), jax.process_count())
    check_same_config(cfg)
    if "mesh" in cfg and jax.process_count() > 1:
        check_mesh(cfg.mesh, jax.process_count(), jax.device_count())
    return True


def lost_peer(cause: BaseException, where: str = "a collective") -> DistributedError:
    """The error of a collective that failed because another process died or cannot be reached
    (gloo: "Connection closed by peer"; NCCL / ICI: JAX's heartbeat after ``timeout_s``)."""
    return DistributedError(
        f"{where} between the {process.count()} processes failed ({type(cause).__name__}: "
        f"{str(cause).strip().splitlines()[0][:300] if str(cause).strip() else ''}). Most likely another process "
        "died or cannot be reached: see its log. This process stops too; restart every process with the "
        "same command to resume from the last checkpoint.")


def run_guarded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``; with several processes a DistributedError -- or a JAX runtime
    error, i.e. a peer lost inside a compiled step's collective -- prints one ``skillax:`` line
    to stderr and ends this process at once with exit status 3 (``os._exit``: JAX's shutdown
    barrier would otherwise wait ``distributed.timeout_s`` for the dead peer, then abort)."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 -- classified below, re-raised when not a peer failure
        if process.count() == 1:
            raise
        import jax

        if isinstance(e, DistributedError):
            err = e
        elif isinstance(e, jax.errors.JaxRuntimeError):
            err = lost_peer(e, "a device step")
        else:
            raise
        print(f"skillax: process {process.index()}: DistributedError: {err}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(3)


def require_single_process(what: str) -> None:
    """NotImplementedError when more than one process runs ``what`` (a method loop or mode whose
    rollout split and host-state sync across processes are not built yet)."""
    if process.count() > 1:
        raise NotImplementedError(
            f"{what} with {process.count()} processes is not built yet ({ISSUE}, items 2 and 4: rollouts "
            "split across processes, one truth for the host state; skill1, skillos and skill_alpha have them). Run it "
            "with one process (--config.distributed.enabled=false).")


def runtime_info(mesh=None) -> dict:
    """What ``config.json`` records about the run's processes and mesh (``run_dir.prepare``)."""
    import jax

    return {"process_count": jax.process_count(), "device_count": jax.device_count(),
            "local_device_count": jax.local_device_count(), "backend": jax.default_backend(),
            "mesh": None if mesh is None else {k: int(v) for k, v in dict(mesh.shape).items()}}
