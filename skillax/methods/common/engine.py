"""``PolicyEngine``: the policy's device side as one object for the method loops.

Owns the trainer state ``{"params" (fp32 master), "opt_state", "step"}``, the jitted
train step per objective set, a bf16 (compute-dtype) copy of the weights for the sampler
(refreshed after every update: one cast, no re-layout; the sampler reads it without another
copy), and the orbax checkpointer (device state + host payload + file blobs).

With more than one device (``config.mesh``, :func:`engine_mesh`) the state lives on a
("data", "fsdp", "tensor") mesh: parameters and Adam moments by their logical axes
(``rl.train_step.state_shardings``), batches split over ("data", "fsdp"), the sampler's
bf16 copy keeps the parameter shardings (the sampler shards its KV cache to match), and a
checkpoint restores onto whatever mesh the restoring engine has.

Several processes (issue 21, ``skillax.distributed``): the train state lives on the global
mesh over every process's devices; :meth:`train` / :meth:`sft` first make sure every process
holds the same whole host batch (``rl.global_batch``: a digest check, or an all-gather of each
process's own rows) so all run the same compiled programs, and each places only its devices'
rows. The **sampler reads a per-process replica** of the bf16 weights on the process's own
devices (``distributed.local_mesh_shape``: the global mesh's tensor axis kept, the batch
axes divided by the process count), re-made after every update from the gathered global
weights (``process_allgather``: the whole model passes through each host once per update), so
a process samples for its own episodes without waiting for the others. Checkpoints use
orbax's multi-process save: every process writes its shards of the device state, process 0
the host payload and files (orbax's primary host); the workdir must be one shared folder.

The method loops use only: ``policy_sampler``, ``train``, ``save``, ``restore``, ``tokenizer``,
``precompile_sampler``.
"""

from __future__ import annotations

import dataclasses
import pathlib
import shutil
import time
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from skillax import collectives, process
from skillax.engine.buckets import model_buckets
from skillax.engine.sampler import Sampler, parse_compiler_options
from skillax.methods.common.policy import CallCounter, PolicySampler
from skillax.models.registry import load_policy, resolve_dtype
from skillax.rl import minibatch as mb_lib
from skillax.rl import optim
from skillax.rl.checkpoint import Checkpointer


def engine_mesh(mesh_cfg):
    """The engine's ``Mesh`` from ``config.mesh`` (``config_defaults.mesh``), or None.

    ``enabled``: "auto" -> a mesh of ``shape`` over all devices when there is more than one
    non-CPU device (CPU fake devices are for tests); "true" -> always when more than one
    device; "false" -> None. With several processes (``skillax.distributed``) always the mesh over
    every process's devices ("false" is then an error, as is a data x fsdp the process count
    does not divide). Raises ValueError for a shape that does not fit the devices.
    """
    from skillax.sharding import make_mesh

    enabled = str(mesh_cfg.get("enabled", "auto")).lower() if mesh_cfg is not None else "false"
    if enabled not in ("auto", "true", "false"):
        raise ValueError(f"config.mesh.enabled must be auto | true | false, got {enabled!r}")
    if jax.process_count() > 1:     # several processes: always one mesh over all of them (issue 21)
        from skillax.distributed import check_mesh
        check_mesh(mesh_cfg, jax.process_count(), jax.device_count())
        return make_mesh(tuple(int(x) for x in mesh_cfg.shape))
    if enabled == "false" or jax.device_count() == 1:
        return None
    if enabled == "auto" and jax.default_backend() == "cpu":
        return None
    return make_mesh(tuple(int(x) for x in mesh_cfg.shape))


def batch_shards(mesh) -> int:
    """How many ways a batch is split on ``mesh`` (data x fsdp); 1 without a mesh."""
    if mesh is None:
        return 1
    return int(mesh.shape["data"] * mesh.shape["fsdp"])


@dataclasses.dataclass
class EngineConfig:
    """Trainer knobs read from ``config.train`` (see ``config_defaults.train``)."""

    lr: float
    total_steps: int
    warmup_ratio: float
    schedule: str
    clip_norm: float
    weight_decay: float
    micro_batch: int
    remat: bool
    logprob_chunk: int
    length_buckets: tuple[int, ...]
    update_layout: str = "buckets"
    mini_batches: int = 1
    epochs: int = 1
    skip_no_signal: bool = True
    objective_grad_norms_every: int = 0

    def __post_init__(self):
        if self.objective_grad_norms_every < 0:
            raise ValueError(f"rl.objective_grad_norms_every must be >= 0 (0 = off), got {self.objective_grad_norms_every}")
        if self.update_layout not in mb_lib.LAYOUTS:
            raise ValueError(f"train.update_layout must be one of {mb_lib.LAYOUTS}, got {self.update_layout!r}")
        if self.mini_batches < 1 or self.epochs < 1:
            raise ValueError(f"rl.mini_batches and rl.epochs must be >= 1, got {self.mini_batches}, {self.epochs}")

    @classmethod
    def from_config(cls, c, rl=None) -> "EngineConfig":
        """From ``config.train`` (and ``config.rl`` for ``mini_batches``, ``epochs``,
        ``skip_no_signal``, ``objective_grad_norms_every``)."""
        rl = rl if rl is not None else {}
        return cls(lr=float(c.lr), total_steps=int(c.total_steps), warmup_ratio=float(c.warmup_ratio),
                   schedule=str(c.get("schedule", "cosine")),
                   clip_norm=float(c.clip_norm), weight_decay=float(c.weight_decay),
                   micro_batch=int(c.micro_batch), remat=bool(c.remat), logprob_chunk=int(c.logprob_chunk),
                   length_buckets=tuple(int(x) for x in c.length_buckets),
                   update_layout=str(c.get("update_layout", "buckets")),
                   mini_batches=int(rl.get("mini_batches", 1)), epochs=int(rl.get("epochs", 1)),
                   skip_no_signal=bool(rl.get("skip_no_signal", True)),
                   objective_grad_norms_every=int(rl.get("objective_grad_norms_every", 0)))

    @property
    def updates_per_step(self) -> int:
        """Optimiser updates per RL step (k mini-batches x E epochs); the lr schedule counts these."""
        return self.mini_batches * self.epochs


class PolicyEngine:
    """See module docstring. Build with :meth:`create`."""

    def __init__(self, params, model_cfg, tokenizer, cfg, workdir: pathlib.Path):
        self.cfg = cfg
        self.model_cfg = model_cfg
        self.tokenizer = tokenizer
        self.workdir = pathlib.Path(workdir)
        self.compute_dtype = resolve_dtype(cfg.model.dtype)
        self.train_cfg = EngineConfig.from_config(cfg.train, cfg.get("rl"))
        # the schedule counts optimiser updates: total_steps RL steps of k x E updates each
        opt_steps = max(self.train_cfg.total_steps * self.train_cfg.updates_per_step, 1)
        self.optimizer = optim.make_optimizer(
            self.train_cfg.lr, opt_steps, warmup_ratio=self.train_cfg.warmup_ratio,
            weight_decay=self.train_cfg.weight_decay, clip_norm=self.train_cfg.clip_norm,
            schedule=self.train_cfg.schedule)
        self.schedule = optim.make_schedule(self.train_cfg.lr, opt_steps,
                                            warmup_ratio=self.train_cfg.warmup_ratio, kind=self.train_cfg.schedule)
        self.mesh = engine_mesh(cfg.get("mesh"))
        if self.mesh is not None and int(self.train_cfg.micro_batch) % batch_shards(self.mesh):
            raise ValueError(f"train.micro_batch={self.train_cfg.micro_batch} must be a multiple of the "
                             f"batch shards data x fsdp = {batch_shards(self.mesh)} of mesh {dict(self.mesh.shape)}")
        self.state = self._init_state(params, self.optimizer, donate=True)
        del params
        self._local_shardings = self._make_local_shardings()
        cast_kw = {}
        if self.mesh is not None:
            from skillax.models.params import param_shardings
            cast_kw["out_shardings"] = param_shardings(self.model_cfg, self.mesh)
        dt = self.compute_dtype
        # built once: a fresh jit per refresh would compile again after every update
        self._cast = jax.jit(lambda p: jax.tree.map(lambda x: x.astype(dt), p), **cast_kw)
        self._sampler_params = None
        self.ref_params = None  # frozen initial weights, created on first use (KL objectives)
        self._resumed = False   # restore() found a checkpoint
        self._refresh_sampler_params()
        # model.sampler_memory_gb: a call predicted above it runs as several row chunks (same
        # samples) instead of asking the device for more (issue 17 item 3; 0 = off)
        self.sampler = Sampler(model_cfg, tokenizer, max_len=int(cfg.model.max_len), dtype=self.compute_dtype,
                               buckets=model_buckets(cfg.model, jax.default_backend()),
                               share_prefill=bool(cfg.model.get("share_prefill", True)),
                               cache_attention=str(cfg.model.get("cache_attention", "auto")),
                               memory_budget=int(float(cfg.model.get("sampler_memory_gb", 0.0)) * 2**30),
                               compiler_options=parse_compiler_options(cfg.model.get("sampler_xla", "")))
        self.checkpointer = Checkpointer(self.workdir / "checkpoints", max_to_keep=int(cfg.get("keep_checkpoints", 2)))
        self._train_steps: dict[Any, Any] = {}
        self._rl_calls = 0   # train() calls of this process (rl.objective_grad_norms_every)
        self._calls = CallCounter()  # shared by every policy_sampler (checkpointed)

    @classmethod
    def create(cls, cfg, workdir) -> "PolicyEngine":
        params, model_cfg, tokenizer = load_policy(cfg.model.path, "float32", mesh=engine_mesh(cfg.get("mesh")),
                                                   seed=int(cfg.seed), max_len=int(cfg.model.max_len))
        return cls(params, model_cfg, tokenizer, cfg, pathlib.Path(workdir))

    # ---------------------------------------------------------------- placement
    def _init_state(self, params, optimizer, donate: bool = False) -> dict:
        """``{"params" fp32, "opt_state", "step"}``, created on the mesh when there is one.

        ``donate``: the caller gives up ``params`` (on a mesh the jitted init then reuses their
        buffers instead of holding two copies; on one device fp32 params are kept as they are)."""
        def init(p):
            p = jax.tree.map(lambda x: x.astype(jnp.float32), p)
            return {"params": p, "opt_state": optimizer.init(p), "step": jnp.zeros((), jnp.int32)}
        if self.mesh is None:
            # committed to the device like the step's outputs: with uncommitted inputs the
            # first update's executable does not match the second's and XLA compiles the
            # step twice (measured: +10 s on CPU for a 2-layer model)
            return jax.device_put(init(params), jax.devices()[0])
        from skillax.rl.train_step import state_shardings
        shardings = state_shardings(self.model_cfg, optimizer, self.mesh)
        params = jax.device_put(params, shardings["params"])    # no-op when already placed so
        return jax.jit(init, out_shardings=shardings, donate_argnums=(0,) if donate else ())(params)

    def _put_batch(self, batch: Mapping) -> dict:
        """Host batch -> device arrays, rows split over ("data", "fsdp") on a mesh (several
        processes: the same whole batch on each, every process placing its devices' rows)."""
        if self.mesh is None:
            return dict(batch)
        from skillax.rl.train_step import shard_batch
        return shard_batch(batch, self.mesh, local_rows=False)

    def _global_batch(self, batch: Mapping, scope: str, what: str) -> dict:
        """``rl.global_batch.to_global`` with this engine's micro-batch, buckets and pad id."""
        from skillax.rl.global_batch import to_global
        return to_global(batch, scope, rows_multiple=self.train_cfg.micro_batch,
                         length_buckets=self.train_cfg.length_buckets,
                         pad_id=int(getattr(self.tokenizer, "pad_token_id", 0) or 0), what=what)

    def _make_local_shardings(self):
        """Several processes: the shardings of the per-process sampler replica (module
        docstring); None with one process (the sampler reads the train placement)."""
        if jax.process_count() == 1:
            return None
        from jax.sharding import SingleDeviceSharding

        from skillax.distributed import local_mesh_shape
        from skillax.models.params import param_shardings
        from skillax.sharding import make_mesh

        shape = local_mesh_shape(tuple(int(v) for v in dict(self.mesh.shape).values()), jax.process_count())
        if int(np.prod(shape)) == 1:
            dev = SingleDeviceSharding(jax.local_devices()[0])
            return jax.tree.map(lambda _: dev, param_shardings(self.model_cfg, self.mesh))
        return param_shardings(self.model_cfg, make_mesh(shape, devices=jax.local_devices()))

    def _local_replica(self, params):
        """Global (sharded over every process) sampler-dtype params -> this process's replica
        (one process: ``params`` as they are). A collective: every process calls it."""
        if self._local_shardings is None:
            return params
        from jax.experimental import multihost_utils

        host = multihost_utils.process_allgather(params, tiled=True)      # full numpy arrays
        return jax.device_put(host, self._local_shardings)

    def frozen_target(self):
        """Where a frozen sampler-dtype copy (a worker, an executor) lives between disk and
        sampling: the sampler's weights with one process; with several the global mesh (the
        train placement cast: orbax saves / restores it from every process), made a sampler
        replica with :meth:`sampler_replica`. Its values are the current weights."""
        return self._cast(self.state["params"]) if self._local_shardings is not None else self._sampler_params

    def sampler_replica(self, params):
        """A frozen copy on :meth:`frozen_target`'s placement -> the tree to sample with: as
        given with one process, this process's replica with several (a collective)."""
        return self._local_replica(params)

    # ---------------------------------------------------------------- sampling
    def _refresh_sampler_params(self):
        self._sampler_params = None            # drop the old copy before making the new one
        self._sampler_params = self._local_replica(self._cast(self.state["params"]))

    @property
    def sampler_params(self):
        return self._sampler_params

    def policy_sampler(self, temperature: float, frozen_params=None) -> PolicySampler:
        """A ``PolicySampler`` reading the current weights (or ``frozen_params``) at ``temperature``.

        All samplers of one engine share one call counter through ``self.sampler_calls`` so
        every call draws fresh keys, deterministically per seed (also across resume).
        """
        get = (lambda: frozen_params) if frozen_params is not None else (lambda: self._sampler_params)
        return PolicySampler(self.sampler, self.tokenizer, get, int(self.cfg.seed), temperature,
                             counter=self._calls)

    def precompile_sampler(self, stages) -> dict:
        """Build the sampling programs a method's RL step will call before the loop, when
        ``model.precompile`` is on ("false" by default; "auto": on GPU / TPU, off on CPU;
        ``engine.precompile.precompile_enabled``), with the sampler's current weights (a later
        refresh keeps their shapes and placement, so the programs are reused). ``stages``: a
        callable returning the step's ``engine.precompile.StageCalls``, called only when on.
        Returns {} when off, else {"compile/precompiled": programs built, "compile/precompile_s":
        wall seconds, "compile/precompile_shapes": shapes predicted}.
        Raises ValueError, before anything is built, when more shapes are predicted than
        ``model.precompile_max_programs`` (default 64): each built program stays in memory, and
        the CPU's fine row and prompt buckets predict hundreds (186 for ``benchmarks/rl_loop.py``'s
        Skill1 step with a tiny model: the process died of LLVM "Cannot allocate memory")."""
        from skillax.engine.precompile import precompile_enabled, predicted_shapes

        if not precompile_enabled(self.cfg.model.get("precompile", "false"), jax.default_backend()):
            return {}
        shapes = predicted_shapes(self.sampler, stages(), self._sampler_params)
        cap = int(self.cfg.model.get("precompile_max_programs", 64))
        if len(shapes) > cap:
            raise ValueError(f"model.precompile: {len(shapes)} predicted sampling programs exceed "
                             f"model.precompile_max_programs={cap} (coarser row / prompt buckets, e.g. "
                             f"model.batch_buckets=auto and model.prompt_buckets=coarse, predict fewer; or raise the cap)")
        r = self.sampler.precompile(self._sampler_params, shapes)
        return {"compile/precompiled": r["programs"], "compile/precompile_s": r["seconds"],
                "compile/precompile_shapes": r["shapes"]}

    @property
    def sampler_calls(self) -> int:
        """The shared call counter of this engine's policy samplers."""
        return self._calls.value

    @sampler_calls.setter
    def sampler_calls(self, v: int) -> None:
        self._calls.value = int(v)

    def frozen_copy(self):
        """Sampler-dtype copy of the current weights (a frozen worker / reference policy)."""
        return jax.tree.map(lambda x: x.copy(), self._sampler_params)

    def _frozen_dir(self, name: str) -> pathlib.Path:
        return self.workdir / "frozen" / name

    def has_frozen(self, name: str) -> bool:
        """Whether :meth:`persistent_frozen` saved ``name`` in this workdir."""
        if not self._frozen_dir(name).is_dir():
            return False
        ck = Checkpointer(self._frozen_dir(name), max_to_keep=1)
        try:
            return ck.latest_step() is not None
        finally:
            ck.close()

    def has_checkpoint(self) -> bool:
        """Whether the workdir holds a checkpoint (``restore`` will resume from it)."""
        return self.checkpointer.latest_step() is not None

    def persistent_frozen(self, name: str, *, reuse: bool, placement: str = "sampler"):
        """A frozen sampler-dtype copy of the weights that survives resume.

        ``reuse`` and a copy saved under ``<workdir>/frozen/<name>/`` -> that copy, read onto
        this engine's placement (whatever mesh wrote it). Otherwise: :meth:`frozen_copy` of the
        current weights, saved there first (replacing an older one). Callers pass
        ``reuse=True`` only when they resume from a checkpoint, so a resumed run keeps the
        exact frozen executor / worker / KL reference of the original run instead of
        re-deriving it (GPU SFT is not bit-reproducible; the current weights after a restore
        are the trained policy, not the initial one).

        ``placement``: "sampler" (for sampling) or "train" (an input of the train step, e.g.
        the KL reference). With one process both are the sampler's placement; with several the
        copy is saved from (and restored onto) the global mesh by every process, and "sampler"
        returns this process's replica of it.
        """
        if placement not in ("sampler", "train"):
            raise ValueError(f"placement must be 'sampler' or 'train', got {placement!r}")
        multi = self._local_shardings is not None
        target = self.frozen_target()
        if reuse and self.has_frozen(name):
            ck = Checkpointer(self._frozen_dir(name), max_to_keep=1)
            try:
                params = ck.restore(target=target)[0]
            finally:
                ck.close()
        else:
            params = target if multi else self.frozen_copy()
            if process.is_writer():
                shutil.rmtree(self._frozen_dir(name), ignore_errors=True)   # a stale copy of an older run
            collectives.barrier(f"frozen-{name}-cleared")
            ck = Checkpointer(self._frozen_dir(name), max_to_keep=1)
            try:
                ck.save(0, params, {"name": name})
            finally:
                ck.close()
        return self._local_replica(params) if multi and placement == "sampler" else params

    # ---------------------------------------------------------------- training
    def _train_config(self, objectives: Mapping, num_rows: int):
        from skillax.rl.train_step import TrainConfig

        mb = self.train_cfg.micro_batch
        if num_rows % mb:
            raise ValueError(f"batch of {num_rows} rows is not a multiple of train.micro_batch={mb}")
        return TrainConfig(objectives=tuple(sorted(objectives.items())),
                           temperature=float(self.cfg.rl.temperature), chunk_size=self.train_cfg.logprob_chunk,
                           num_micro_batches=num_rows // mb, compute_dtype=str(jnp.dtype(self.compute_dtype)),
                           remat=self.train_cfg.remat, attn_impl="auto")

    def train(self, batch: Mapping, objectives: Mapping, *, scope: str = "global") -> dict:
        """One RL step on a rollout batch (``skillax.rl.objectives`` format, e.g. from
        ``methods.common.rows.build_batch``). Returns its metrics.

        ``rl.mini_batches`` x ``rl.epochs`` optimiser updates (default 1 x 1: one update on the
        whole batch, the step as it always was), rows of one episode in one mini-batch, the
        sampler's old logprobs and the batch's advantages throughout
        (``skillax.rl.minibatch``). Each update runs on the padded rows, or -- with
        ``train.update_layout = "buckets"`` when its rows span several length buckets -- on
        length-bucketed micro-batches whose gradients add up to the padded update's.
        Metrics: :func:`skillax.rl.minibatch.combine_updates` (one update: the train step's own);
        every ``rl.objective_grad_norms_every``-th call also ``grad_norm_<objective>`` per update
        (:meth:`_objective_grad_norms`).

        Objectives with a KL term use the weights before the first update as the reference
        policy (saved under ``<workdir>/frozen/kl_reference``, reloaded after resume).

        A batch with **no policy-gradient signal** -- every advantage under every objective's
        loss mask exactly 0 (e.g. all groups zero-variance) and no KL term -- runs no update
        when ``rl.skip_no_signal`` (default True, ours): its only gradient is the entropy
        bonus, and Adam normalises that tiny gradient into a full-size step (~lr per weight,
        per update, all in the entropy-raising direction). Measured (learning campaign
        2026-12-01d, Skill-alpha, Qwen2.5-0.5B editor, lr 1e-5 x 4 updates): one such step
        (grad_norm 0.016) took the edit entropy 0.33 -> 1.84 and the valid-edit rate 0.72 ->
        0.09, then 0.0 for the remaining 12 steps. Metrics then: ``update_skipped_no_signal``
        = 1, ``updates`` = 0 (params, optimiser state and the lr schedule untouched).
        ``rl.skip_no_signal=False`` is verl's / TRL's behaviour (the step runs).

        ``scope`` (several processes; ignored with one): "global" -- every process passes the
        same whole batch (checked by digest: ``DistributedError`` on every process when they
        differ); "local" -- each passes its own rows (any count and padded length), gathered
        into one batch in process order (``rl.global_batch``). Either way every process then
        runs the same updates on the same padded shapes and micro-batch counts.
        """
        from skillax.rl import objectives as obj_lib

        t0 = time.perf_counter()
        batch = self._global_batch(batch, scope, "the training batch")
        host = {k: v for k, v in batch.items() if k not in mb_lib.HOST_KEYS}
        obj_lib.validate_batch(host, objectives)
        if self.train_cfg.skip_no_signal and not obj_lib.has_policy_signal(host, objectives):
            return {"update_skipped_no_signal": 1.0, "updates": 0.0, "time/update_s": time.perf_counter() - t0}
        ref = None
        if obj_lib.needs_reference(objectives):
            if self.ref_params is None:   # the weights before the first KL update, also after resume
                self.ref_params = self.persistent_frozen("kl_reference", reuse=self._resumed, placement="train")
            ref = self.ref_params
        B = int(np.shape(host["tokens"])[0])
        n = int(batch.get("num_rows", B))
        episodes = np.asarray(batch["episodes"])[:n] if "episodes" in batch else np.arange(n)
        parts = mb_lib.minibatch_rows(episodes, self.train_cfg.mini_batches)
        lengths = mb_lib.row_lengths(host["valid"])
        updates, dens = [], []
        several = len(parts) * self.train_cfg.epochs > 1
        for _ in range(self.train_cfg.epochs):
            for rows in parts:
                m, d = self._update(host, rows, lengths, objectives, ref,
                                    whole=len(parts) == 1 and rows.size == n, need_dens=several)
                updates.append(m)
                dens.append({k: float(np.asarray(v)) for k, v in d.items()})
        self._rl_calls += 1
        self._refresh_sampler_params()
        metrics = mb_lib.combine_updates([{k: float(np.asarray(v)) for k, v in m.items()} for m in updates],
                                         dens, {k: o.weight for k, o in objectives.items()}, len(parts))
        metrics["time/update_s"] = time.perf_counter() - t0
        return metrics

    def _update(self, host: Mapping, rows: np.ndarray, lengths: np.ndarray, objectives: Mapping, ref,
                whole: bool, need_dens: bool) -> tuple[dict, dict]:
        """One optimiser update on ``rows`` of ``host`` -> (device metrics, its denominators
        (``{}`` for a padded update unless ``need_dens``))."""
        from skillax.rl import objectives as obj_lib

        mb, buckets = self.train_cfg.micro_batch, self.train_cfg.length_buckets
        norms = self._objective_grad_norms(host, rows, lengths, objectives, ref)   # at the update's params
        micro = mb_lib.micro_batches(rows, lengths, buckets, mb)
        if self.train_cfg.update_layout == "padded" or len({T for T, _ in micro}) == 1:
            if whole:   # the batch exactly as built (today's single update)
                sub = host
            else:
                T = mb_lib.bucket_of(max(int(lengths[rows].max()), 1), buckets)
                idx = np.concatenate([rows, np.full(-(-rows.size // mb) * mb - rows.size, -1, np.int64)])
                sub = mb_lib.gather(host, idx, T)
            dens = obj_lib.denominators(sub, objectives) if need_dens else {}
            return {**self._padded_update(sub, objectives, ref), **norms}, dens
        metrics, dens = self._bucketed_update(host, rows, micro, objectives, ref)
        return {**metrics, **norms}, dens

    def _padded_update(self, sub: Mapping, objectives: Mapping, ref) -> dict:
        """``rl.train_step.make_train_step`` on one padded batch (micro-batches by scan)."""
        from skillax.rl import train_step as ts

        tcfg = self._train_config(objectives, int(np.shape(sub["tokens"])[0]))
        if tcfg not in self._train_steps:
            self._train_steps[tcfg] = ts.make_train_step(self.model_cfg, self.optimizer, tcfg,
                                                         mesh=self.mesh, schedule=self.schedule)
        args = (ref,) if ref is not None else ()
        self.state, metrics = self._train_steps[tcfg](self.state, self._put_batch(sub), *args)
        return metrics

    def _bucketed_update(self, host: Mapping, rows: np.ndarray, micro, objectives: Mapping, ref
                         ) -> tuple[dict, dict]:
        """Gradients accumulated over length-bucketed micro-batches (one compiled grad step per
        bucket), then one optimiser update (``rl.train_step.make_grad_step`` / ``make_apply_step``)."""
        from skillax.rl import objectives as obj_lib
        from skillax.rl import train_step as ts

        tcfg = self._train_config(objectives, self.train_cfg.micro_batch)
        key = ("buckets", tcfg)
        if key not in self._train_steps:
            self._train_steps[key] = (ts.make_grad_step(self.model_cfg, tcfg, mesh=self.mesh),
                                      ts.make_apply_step(self.model_cfg, self.optimizer, mesh=self.mesh,
                                                         schedule=self.schedule))
        grad_step, apply_step = self._train_steps[key]
        masks = _row_masks(host, rows)
        dens = obj_lib.denominators({"objectives": masks}, objectives)
        grads, loss, sums = self._accumulate(grad_step, host, micro, objectives, dens, ref)
        self.state, am = apply_step(self.state, grads)
        # replicated scalars -> host values first: no eager op on arrays of the global mesh
        loss, sums = np.asarray(loss), {k: np.asarray(v) for k, v in sums.items()}
        metrics = dict(obj_lib.finalize_metrics(sums, dens))
        valid = np.asarray(host["valid"])[rows].any(-1)
        trained = np.zeros(rows.size, bool)
        for ob in masks.values():
            trained |= ob["loss_mask"].astype(bool).any(-1)
        metrics.update(loss=loss, tokens=sum(sums[f"{n}/tokens"] for n in objectives),
                       rows_without_loss_tokens=float(np.sum(valid & ~trained)), **am)
        return metrics, dens

    def _accumulate(self, grad_step, host: Mapping, micro, objectives: Mapping, dens: Mapping, ref) -> tuple:
        """(grads, loss, sums) of ``grad_step`` (``rl.train_step.make_grad_step``) at the current
        params, summed over the micro-batches ``micro`` ([(T, row indices)]) of ``host``."""
        from skillax.rl import objectives as obj_lib

        params = self.state["params"]
        acc = (jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jnp.float32),
               {f"{n}/{s}": jnp.zeros((), jnp.float32) for n in objectives for s in obj_lib.SUM_STATS})
        for T, idx in micro:
            acc = grad_step(params, acc, self._put_batch(mb_lib.gather(host, idx, T)), dens, ref)
        return acc

    def _objective_grad_norms(self, host: Mapping, rows: np.ndarray, lengths: np.ndarray, objectives: Mapping,
                              ref) -> dict:
        """``rl.objective_grad_norms_every`` = N (a diagnostic; 0 = off: ``{}``): on the 1st,
        (N+1)-th, (2N+1)-th ... ``train`` call of this process (a resumed run counts from its
        restart), ``{"grad_norm_<k>": ||g_k||}`` for each objective k of the update on ``rows``
        of ``host``, at the params it starts from; ``{}`` on the other calls.

        The update's loss is L = sum_k lambda_k num_k / D_k (``rl.objectives.objectives_loss``,
        D_k over the update's rows); g_k is the gradient of objective k's term lambda_k num_k /
        D_k alone, before clipping: the update's own loss function and denominators
        (``rl.train_step.make_grad_step``, the bucketed update's compiled steps) on the rows that
        hold k's tokens with every other objective's mask zeroed
        (:func:`skillax.rl.minibatch.objective_part`). The rows left out and the masks zeroed add
        exactly 0 to g_k, so sum_k g_k = the update's gradient (up to fp32 summation order) and
        ``grad_norm`` <= sum_k ||g_k||. An objective without tokens in the update gives 0.0.

        Cost: every row's forward + backward once more for each objective it trains (Skill1's
        rows each train one: about one more forward + backward over the update's rows, each
        objective's rows padded to their own buckets; with a KL term against reference params
        also their reference forward), one norm per objective, and in the ``"padded"`` layout one
        more compiled grad step per length bucket. It runs before the update, which is a separate
        program left as it is: the applied update is the flag-off one, bit for bit.
        """
        every = self.train_cfg.objective_grad_norms_every
        if every <= 0 or self._rl_calls % every:
            return {}
        from skillax.rl import objectives as obj_lib
        from skillax.rl import train_step as ts

        mb = self.train_cfg.micro_batch
        grad_step = ts.make_grad_step(self.model_cfg, self._train_config(objectives, mb), mesh=self.mesh)
        norm = ts.make_tree_norm(self.mesh)
        dens = obj_lib.denominators({"objectives": _row_masks(host, rows)}, objectives)
        out = {}
        for name in objectives:
            part, micro = mb_lib.objective_part(host, rows, name, lengths, self.train_cfg.length_buckets, mb)
            grads = self._accumulate(grad_step, part, micro, objectives, dens, ref)[0] if micro else None
            out[f"grad_norm_{name}"] = 0.0 if grads is None else norm(grads)
        return out

    def sft(self, batches, *, lr: float, steps: int, warmup_ratio: float = 0.05) -> list[dict]:
        """SFT warm start: ``steps`` updates over ``batches`` (an iterator of SFT batch dicts,
        see ``rl.train_step.make_sft_step``) with their own AdamW + warmup/cosine schedule.
        The RL optimiser state is re-initialised afterwards (the warm start is a separate
        stage, as in the papers). Returns per-step metrics. Several processes: every process
        must yield the same batches (checked by digest, as ``train(scope="global")``)."""
        from skillax.rl.train_step import TrainConfig, make_sft_step

        opt = optim.make_optimizer(lr, max(steps, 1), warmup_ratio=warmup_ratio, clip_norm=self.train_cfg.clip_norm)
        sched = optim.make_schedule(lr, max(steps, 1), warmup_ratio=warmup_ratio)
        # the RL optimiser state is re-initialised afterwards: drop it now (peak memory)
        params, self.state = self.state["params"], None
        sft_state = self._init_state(params, opt, donate=True)
        del params
        fns, out = {}, []
        for _ in range(steps):
            batch = self._global_batch(next(batches), "global", "the SFT batch")
            B = int(np.shape(batch["tokens"])[0])
            tcfg = TrainConfig(chunk_size=self.train_cfg.logprob_chunk,
                               num_micro_batches=max(B // self.train_cfg.micro_batch, 1),
                               compute_dtype=str(jnp.dtype(self.compute_dtype)), remat=self.train_cfg.remat,
                               attn_impl="auto")
            if tcfg not in fns:
                fns[tcfg] = make_sft_step(self.model_cfg, opt, tcfg, mesh=self.mesh, schedule=sched)
            t0 = time.perf_counter()
            sft_state, m = fns[tcfg](sft_state, self._put_batch(batch))
            m = {k: float(np.asarray(v)) for k, v in m.items()}
            m["time_s"] = time.perf_counter() - t0
            out.append(m)
        params, sft_state = sft_state["params"], None
        self.state = self._init_state(params, self.optimizer, donate=True)
        self._refresh_sampler_params()
        return out

    def load_params(self, params) -> None:
        """Replace the policy weights (e.g. a saved warm start, ``methods.common.warmstart``)
        with a fresh optimiser state; the sampler's copy is refreshed."""
        self.state = None
        self.state = self._init_state(params, self.optimizer, donate=True)
        self._refresh_sampler_params()

    # ---------------------------------------------------------------- checkpoints
    def save(self, step: int, host: Mapping[str, Any] | None = None, files: Mapping[str, bytes] | None = None):
        """Checkpoint ``step``: the device state, the JSON-able ``host`` payload (+ the sampler
        call counter) and ``files`` (name -> bytes). Several processes: every process calls it
        with the same payload and files (checked by digest first: ``DistributedError`` on every
        process otherwise, nothing written); orbax writes the shards from every process and the
        payload and files from process 0."""
        import json

        host = dict(host or {})
        host["sampler_calls"] = self.sampler_calls
        if jax.process_count() > 1:
            blob = json.dumps(host, sort_keys=True, default=str).encode()
            for k in sorted(files or {}):
                blob += b"\0" + k.encode() + b"\0" + collectives.digest(files[k])
            collectives.agree(f"checkpoint {step}'s host payload and files", blob)
        self.checkpointer.save(int(step), self.state, host, files)

    def restore(self) -> tuple[int, dict | None, dict]:
        """Latest checkpoint -> (next step to run, host payload, files); (0, None, {}) when none.

        The state is restored onto this engine's placement (its mesh, or one device), whatever
        mesh wrote the checkpoint. A damaged newest checkpoint is moved aside and the previous
        intact one restored, with a one-line warning (``Checkpointer.restore_latest``; raises
        ``CheckpointError`` when none reads)."""
        # several processes read the same folder: only process 0 moves a damaged step aside
        found = self.checkpointer.restore_latest(target=self.state, quarantine=process.is_writer())
        if found is None:
            return 0, None, {}
        latest, state, host, files = found
        self.state = state
        self._resumed = True
        self.sampler_calls = int(host.get("sampler_calls", 0))
        self._refresh_sampler_params()
        return latest + 1, host, files

    def close(self):
        self.checkpointer.close()


def _row_masks(host: Mapping, rows: np.ndarray) -> dict:
    """{objective: {"loss_mask": (len(rows), T)}}: the loss masks of ``rows`` of ``host`` (an
    update's denominators: ``rl.objectives.denominators({"objectives": ...})``)."""
    return {n: {"loss_mask": np.asarray(ob["loss_mask"])[rows]} for n, ob in host["objectives"].items()}
