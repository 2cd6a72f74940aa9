"""The jitted, sharded train steps (RL objectives and SFT) over the transformer.

Loss path: ``forward(params, cfg, tokens, positions, valid)`` -> hidden (B, T, D) ->
chunked fp32 logprobs/entropy against ``lm_head_weight`` (never full logits) -> weighted
objectives (:mod:`skillax.rl.objectives`) or SFT NLL (:mod:`skillax.rl.sft`).

Gradient accumulation: the batch's leading axis B is split into ``num_micro_batches`` M
micro-batches (row r goes to micro-batch ``r % M``, so a batch sharded over devices stays
evenly spread). The aggregation denominators of the **whole** batch are computed first from
the masks; a ``lax.scan`` over micro-batches then sums gradients of
``sum_k lambda_k num_k / D_k`` and the additive metric sums. The result equals one big batch
in every aggregation mode; one optax update follows.

Train state (a plain dict, what :mod:`skillax.rl.checkpoint` saves)::

    {"params": fp32 master params, "opt_state": optax state, "step": () int32}

Params stay fp32; ``TrainConfig.compute_dtype`` (e.g. bfloat16) is applied inside
``forward`` per layer and to the LM head (see :mod:`skillax.rl.optim`).

Sharding: with a ``mesh`` the params follow ``skillax.models.params.param_shardings``, Adam
moments follow their params, scalars are replicated, and the batch is split over
``("data", "fsdp")`` (:func:`shard_batch`; with several processes each passes its own rows and
the mesh spans every process's devices). Without a mesh everything is placed by jax.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec as P

from skillax import sharding as sharding_lib
from skillax.models import params as params_lib
from skillax.models import transformer
from skillax.models.config import ModelConfig
from skillax.rl import aggregation, objectives as obj_lib, sft
from skillax.rl.logprobs import check_sampling, token_logprobs


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Static knobs of the train step (hashable).

    Attributes:
      objectives: ((name, ObjectiveConfig), ...) -- a tuple so the config stays hashable;
        ignored by the SFT step.
      temperature, top_k, top_p, renormalize: the rollout distribution (PITFALLS 6-7).
      chunk_size: sequence positions per logprob chunk.
      num_micro_batches: M; the batch size must be divisible by it.
      compute_dtype: "float32" or "bfloat16" for matmuls (params stay fp32).
      remat: rematerialise each layer in the backward pass.
      attn_impl: "auto", "xla" or "cudnn" (see ``transformer.forward``).
      sft_aggregation / sft_max_len: SFT loss aggregation.
    """

    objectives: tuple[tuple[str, obj_lib.ObjectiveConfig], ...] = (("policy", obj_lib.ObjectiveConfig()),)
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    renormalize: bool = False
    chunk_size: int = 512
    num_micro_batches: int = 1
    compute_dtype: str = "float32"
    remat: bool = True
    attn_impl: str = "auto"
    sft_aggregation: str = "token_mean"
    sft_max_len: int | None = None

    def __post_init__(self):
        check_sampling(self.temperature, self.top_k, self.top_p, self.renormalize)
        if self.num_micro_batches < 1:
            raise ValueError(f"num_micro_batches must be >= 1, got {self.num_micro_batches}")
        if self.compute_dtype not in ("float32", "bfloat16"):
            raise ValueError(f"compute_dtype must be 'float32' or 'bfloat16', got {self.compute_dtype!r}")
        names = [n for n, _ in self.objectives]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate objective names {names}")
        aggregation.check_mode(self.sft_aggregation, self.sft_max_len)

    @property
    def objectives_dict(self) -> dict[str, obj_lib.ObjectiveConfig]:
        return dict(self.objectives)


# One program per tree structure; a jit output never aliases its (non-donated) input.
_copy_f32 = jax.jit(lambda tree: jax.tree.map(lambda x: jnp.asarray(x).astype(jnp.float32), tree))


def init_train_state(params, optimizer: optax.GradientTransformation) -> dict:
    """``{"params", "opt_state", "step"}`` with an fp32 *copy* of ``params`` (the step donates
    the state, so the caller's tree stays usable). For a sharded init jit it:
    ``jax.jit(lambda p: init_train_state(p, opt), out_shardings=state_shardings(...))``."""
    params = _copy_f32(params)
    return {"params": params, "opt_state": optimizer.init(params), "step": jnp.zeros((), jnp.int32)}


def state_shardings(model_cfg: ModelConfig, optimizer: optax.GradientTransformation, mesh,
                    rules=sharding_lib.DEFAULT_RULES) -> dict:
    """NamedShardings of the train state on ``mesh``: params by their logical axes, optimiser
    leaves shaped like params follow them (``optax.tree_map_params``), the rest replicated."""
    p_sh = params_lib.param_shardings(model_cfg, mesh, rules)
    abstract = params_lib.abstract_params(model_cfg, jnp.float32)
    opt_abstract = jax.eval_shape(optimizer.init, abstract)
    rep = NamedSharding(mesh, P())
    opt_sh = optax.tree_map_params(optimizer, lambda _, s: s, opt_abstract, p_sh,
                                   transform_non_params=lambda _: rep)
    return {"params": p_sh, "opt_state": opt_sh, "step": rep}


def shard_batch(batch: Mapping, mesh, *, local_rows: bool = True) -> dict:
    """Every (B, ...) leaf of a host batch -> a global array with B split over ("data", "fsdp").

    One process: ``device_put`` of the whole batch. Several processes (``jax.process_count() >
    1``, issue 21):

    * ``local_rows=True``: each process passes **its own rows** (B_local, ...), and the global
      batch is the processes' rows in process order, B = B_local x process_count
      (``jax.make_array_from_process_local_data``); every process must pass the same B_local and
      trailing shape.
    * ``local_rows=False``: every process passes the **same whole batch** (B, ...) (e.g. from
      ``rl.global_batch.to_global``) and places only the rows its devices hold
      (``jax.make_array_from_callback``; any device order of the mesh).

    The train step is unchanged and its sums (tokens, loss) are global.
    """
    if jax.process_count() == 1:
        return jax.tree.map(lambda x: jax.device_put(x, sharding_lib.batch_sharding(mesh, jnp.ndim(x))), dict(batch))

    def put(x):
        x = np.asarray(x)
        sh = sharding_lib.batch_sharding(mesh, x.ndim)
        if not local_rows:
            return jax.make_array_from_callback(x.shape, sh, lambda idx: x[idx])
        return jax.make_array_from_process_local_data(sh, x, (x.shape[0] * jax.process_count(),) + x.shape[1:])
    return jax.tree.map(put, dict(batch))


def _split_micro(batch, M: int):
    """(B, ...) leaves -> (M, B/M, ...); row r -> micro-batch r % M."""
    def f(x):
        B = x.shape[0]
        if B % M:
            raise ValueError(f"batch size {B} is not divisible by num_micro_batches={M}")
        return jnp.swapaxes(x.reshape((B // M, M) + x.shape[1:]), 0, 1)
    return jax.tree.map(f, batch)


def _logprobs(params, model_cfg: ModelConfig, tcfg: TrainConfig, tokens, positions, valid, mask=None):
    dt = jnp.dtype(tcfg.compute_dtype)
    hidden, _ = transformer.forward(params, model_cfg, tokens, positions, valid, dtype=dt,
                                    remat=tcfg.remat, attn_impl=tcfg.attn_impl)
    head = transformer.lm_head_weight(params, model_cfg).astype(dt)
    return token_logprobs(hidden, head, tokens, temperature=tcfg.temperature, chunk_size=tcfg.chunk_size,
                          top_k=tcfg.top_k, top_p=tcfg.top_p, renormalize=tcfg.renormalize, mask=mask)


def _loss_positions(mb, objs) -> jax.Array:
    """(b, T) bool: the union of the objectives' loss masks -- the only positions whose
    logprobs / entropy / reference logprobs the RL loss reads (``objectives_loss`` zeroes the
    rest), so the LM head runs only on chunks that hold one (``token_logprobs(mask=...)``)."""
    masks = [mb["objectives"][name]["loss_mask"].astype(bool) for name in objs]
    return functools.reduce(jnp.logical_or, masks)


def make_logprob_fn(model_cfg: ModelConfig, tcfg: TrainConfig) -> Callable:
    """Jitted ``(params, tokens, positions, valid) -> (logprobs, entropy)`` (B, T) fp32 under the
    training distribution (temperature/truncation of ``tcfg``): recompute old or reference
    logprobs with it."""
    return jax.jit(lambda p, t, pos, v: _logprobs(p, model_cfg, tcfg, t, pos, v))


def _accumulate(loss_fn, params, micro):
    """Scan micro-batches: sum grads and aux sums of ``loss_fn(params, mb) -> (loss, sums)``."""
    first = jax.tree.map(lambda x: x[0], micro)
    (_, sums0) = jax.eval_shape(loss_fn, params, first)
    zeros = (jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jnp.float32),
             jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), sums0))

    def body(carry, mb):
        g_acc, l_acc, s_acc = carry
        (loss, sums), g = jax.value_and_grad(loss_fn, has_aux=True)(params, mb)
        return (jax.tree.map(jnp.add, g_acc, g), l_acc + loss, jax.tree.map(jnp.add, s_acc, sums)), None

    (grads, loss, sums), _ = jax.lax.scan(body, zeros, micro)
    return grads, loss, sums


def _apply(state, grads, optimizer):
    """One optax update, skipped (state kept as is) when the gradient is not finite.

    Returns (new_state, grad_norm, skipped) -- a NaN/inf from bad data never reaches the
    params or the Adam moments; ``step`` counts applied updates only.
    """
    grad_norm = optax.tree.norm(grads)
    ok = jnp.isfinite(grad_norm)
    updates, opt_state = optimizer.update(grads, state["opt_state"], state["params"])
    params = optax.apply_updates(state["params"], updates)
    new = {"params": params, "opt_state": opt_state, "step": state["step"] + 1}
    new = jax.tree.map(lambda n, o: jnp.where(ok, n, o), new, state)
    return new, grad_norm, 1.0 - ok.astype(jnp.float32)


def _jit(fn, mesh, model_cfg, optimizer):
    if mesh is None:
        return jax.jit(fn, donate_argnums=(0,))
    st = state_shardings(model_cfg, optimizer, mesh)
    jitted = jax.jit(fn, donate_argnums=(0,), out_shardings=(st, NamedSharding(mesh, P())))

    @functools.wraps(fn)
    def under_mesh(*args):
        # traced with the mesh set, so the forward pins activation shardings (sharding.constrain)
        with jax.set_mesh(mesh):
            return jitted(*args)
    return under_mesh


def make_train_step(model_cfg: ModelConfig, optimizer: optax.GradientTransformation, tcfg: TrainConfig,
                    *, mesh=None, schedule: optax.Schedule | None = None) -> Callable:
    """Build the jitted RL step ``(state, batch, ref_params=None) -> (state, metrics)``.

    Args:
      model_cfg: the policy's ``ModelConfig``.
      optimizer: e.g. :func:`skillax.rl.optim.make_optimizer`.
      tcfg: :class:`TrainConfig` (objectives, temperature, chunking, micro-batches, dtype).
      mesh: optional mesh; the returned state keeps :func:`state_shardings`.
      schedule: optional lr schedule, reported as ``lr`` (the lr used by this update).
    Step args:
      state: train state (donated). batch: the dict of :mod:`skillax.rl.objectives` (B rows,
        B divisible by M), e.g. ``methods.common.rows.build_batch``'s output as it is (its
        host-only keys are dropped: :func:`device_batch`). ref_params: frozen reference params for KL when the batch has no
        ``ref_logprobs`` (computed per micro-batch under stop_gradient).
    Returns metrics (() arrays): ``loss``, ``grad_norm`` (before clipping), ``tokens``,
      ``update_skipped`` (1 when a non-finite gradient was dropped: params and optimiser state
      are then returned unchanged -- never a NaN update), ``rows_without_loss_tokens`` (valid
      rows no objective trains on), ``lr`` (if a schedule is given), and per objective
      ``{name}/loss, pg_loss, kl, entropy, clip_frac, dual_clip_frac, ratio_mean, tokens``.
    Raises (at trace time): ValueError when an objective needs KL and neither
      ``batch["ref_logprobs"]`` nor ``ref_params`` is given, or B % M != 0.
    """
    objs = tcfg.objectives_dict
    M = tcfg.num_micro_batches

    def step(state, batch, ref_params=None):
        batch = dict(batch)
        if obj_lib.needs_reference(objs) and "ref_logprobs" not in batch and ref_params is None:
            raise ValueError("an objective has kl_coef > 0: pass batch['ref_logprobs'] or ref_params")
        dens = obj_lib.denominators(batch, objs)
        micro = _split_micro(batch, M)
        loss_fn = _rl_loss_fn(model_cfg, tcfg, objs, dens, ref_params)
        grads, loss, sums = _accumulate(loss_fn, state["params"], micro)
        new_state, grad_norm, skipped = _apply(state, grads, optimizer)
        any_mask = sum(jnp.asarray(o["loss_mask"]).astype(bool) for o in batch["objectives"].values()) > 0
        metrics = dict(obj_lib.finalize_metrics(sums, dens))
        metrics.update(loss=loss, grad_norm=grad_norm, update_skipped=skipped,
                       tokens=sum(sums[f"{n}/tokens"] for n in objs),
                       rows_without_loss_tokens=jnp.sum(jnp.any(batch["valid"], -1) & ~jnp.any(any_mask, -1)))
        if schedule is not None:
            metrics["lr"] = jnp.asarray(schedule(state["step"]), jnp.float32)
        return new_state, metrics

    jitted = _jit(step, mesh, model_cfg, optimizer)

    @functools.wraps(step)
    def call(state, batch, ref_params=None):
        # build_batch's host-only keys (row counts, episode ids) never reach the device: a
        # batch from methods.common.rows.build_batch feeds this step as it is (issue 23 item 10)
        return jitted(state, device_batch(batch), ref_params)
    return call


def device_batch(batch: Mapping) -> dict:
    """``batch`` without the host-only keys (:data:`skillax.rl.minibatch.HOST_KEYS`: ``num_rows``,
    ``dropped_truncated``, ``episodes``) that ``build_batch`` adds for the host loop."""
    from skillax.rl.minibatch import HOST_KEYS

    return {k: v for k, v in batch.items() if k not in HOST_KEYS}


def _rl_loss_fn(model_cfg: ModelConfig, tcfg: TrainConfig, objs, dens, ref_params):
    """``(params, micro_batch) -> (loss, sums)`` of the RL objectives (the body of
    :func:`make_train_step`'s scan; also one call of :func:`make_grad_step`)."""
    def loss_fn(params, mb):
        used = _loss_positions(mb, objs)
        logp, ent = _logprobs(params, model_cfg, tcfg, mb["tokens"], mb["positions"], mb["valid"], used)
        ref = mb.get("ref_logprobs")
        if ref is None and ref_params is not None and obj_lib.needs_reference(objs):
            ref = jax.lax.stop_gradient(
                _logprobs(ref_params, model_cfg, tcfg, mb["tokens"], mb["positions"], mb["valid"], used)[0])
        return obj_lib.objectives_loss(logp, ent, mb, objs, dens, ref)
    return loss_fn


@functools.lru_cache(maxsize=16)
def make_grad_step(model_cfg: ModelConfig, tcfg: TrainConfig, *, mesh=None) -> Callable:
    """Jitted ``(params, acc, micro_batch, dens, ref_params=None) -> acc``: adds one micro-batch's
    gradient, loss and metric sums to the accumulator ``acc = (grads, loss, sums)`` (donated;
    start from zeros: grads like the params, loss (), sums ``{name}/{stat}`` () for stat in
    :data:`skillax.rl.objectives.SUM_STATS`).

    Gradient accumulation over micro-batches of *different* padded lengths (one compiled
    program per micro-batch shape, i.e. per length bucket): ``dens`` are the denominators of
    the whole update (:func:`skillax.rl.objectives.denominators` over every row of it), so the
    summed gradient is the one of :func:`make_train_step` on the same rows padded to one length
    -- up to fp32 summation order. :func:`make_apply_step` then applies it. Cached per (model,
    config, mesh): it does not depend on the optimiser, so the engines of one process share
    its compiled programs.
    """
    objs = tcfg.objectives_dict

    def grad_step(params, acc, mb, dens, ref_params=None):
        if obj_lib.needs_reference(objs) and "ref_logprobs" not in mb and ref_params is None:
            raise ValueError("an objective has kl_coef > 0: pass batch['ref_logprobs'] or ref_params")
        loss_fn = _rl_loss_fn(model_cfg, tcfg, objs, dens, ref_params)
        (loss, sums), g = jax.value_and_grad(loss_fn, has_aux=True)(params, mb)
        g_acc, l_acc, s_acc = acc
        return jax.tree.map(jnp.add, g_acc, g), l_acc + loss, jax.tree.map(jnp.add, s_acc, sums)

    if mesh is None:
        return jax.jit(grad_step, donate_argnums=(1,))
    rep = NamedSharding(mesh, P())
    jitted = jax.jit(grad_step, donate_argnums=(1,),
                     out_shardings=(params_lib.param_shardings(model_cfg, mesh), rep, rep))

    @functools.wraps(grad_step)
    def under_mesh(*args):
        with jax.set_mesh(mesh):
            return jitted(*args)
    return under_mesh


def make_apply_step(model_cfg: ModelConfig, optimizer: optax.GradientTransformation, *, mesh=None,
                    schedule: optax.Schedule | None = None) -> Callable:
    """Jitted ``(state, grads) -> (state, metrics)``: one optax update with accumulated grads
    (the state donated), skipped when they are not finite (:func:`_apply`). Metrics: ``grad_norm``,
    ``update_skipped`` and ``lr`` (with a schedule) as in :func:`make_train_step`."""
    def apply(state, grads):
        new_state, grad_norm, skipped = _apply(state, grads, optimizer)
        metrics = {"grad_norm": grad_norm, "update_skipped": skipped}
        if schedule is not None:
            metrics["lr"] = jnp.asarray(schedule(state["step"]), jnp.float32)
        return new_state, metrics

    if mesh is None:
        return jax.jit(apply, donate_argnums=(0,))
    st = state_shardings(model_cfg, optimizer, mesh)
    jitted = jax.jit(apply, donate_argnums=(0,), out_shardings=(st, NamedSharding(mesh, P())))

    @functools.wraps(apply)
    def under_mesh(*args):
        with jax.set_mesh(mesh):
            return jitted(*args)
    return under_mesh


@functools.lru_cache(maxsize=8)
def make_tree_norm(mesh=None) -> Callable:
    """Jitted ``tree -> () fp32``: the global L2 norm over all leaves (``optax.tree.norm``, the
    norm ``grad_norm`` reports), replicated on ``mesh``. Used for the per-objective gradient
    norms of ``rl.objective_grad_norms_every`` (``PolicyEngine._objective_grad_norms``)."""
    if mesh is None:
        return jax.jit(optax.tree.norm)
    jitted = jax.jit(optax.tree.norm, out_shardings=NamedSharding(mesh, P()))

    def under_mesh(tree):
        with jax.set_mesh(mesh):
            return jitted(tree)
    return under_mesh


def make_sft_step(model_cfg: ModelConfig, optimizer: optax.GradientTransformation, tcfg: TrainConfig,
                  *, mesh=None, schedule: optax.Schedule | None = None) -> Callable:
    """Jitted SFT step ``(state, batch) -> (state, metrics)``.

    batch: {"tokens", "positions", "valid", "loss_mask"} (B, T) (+ optional "segment_ids"),
    e.g. from :func:`skillax.rl.data.sft_dataset`. Temperature is ignored (SFT scores T = 1).
    Metrics: ``loss`` (NLL per the SFT aggregation), ``nll`` (per-token mean), ``tokens``,
    ``confident_frac``, ``grad_norm``, ``update_skipped`` (see :func:`make_train_step`), ``lr``.
    """
    M = tcfg.num_micro_batches
    mode, max_len = tcfg.sft_aggregation, tcfg.sft_max_len
    scfg = dataclasses.replace(tcfg, temperature=1.0, top_k=None, top_p=None, renormalize=False)

    def step(state, batch):
        batch = dict(batch)
        mask = batch["loss_mask"].astype(bool)
        if "segment_ids" in batch:
            mask = mask & ~sft.segment_start_mask(batch["segment_ids"])
        den = aggregation.denominator(mask, mode, max_len)
        micro = _split_micro(batch, M)

        def loss_fn(params, mb):
            dt = jnp.dtype(scfg.compute_dtype)
            hidden, _ = transformer.forward(params, model_cfg, mb["tokens"], mb["positions"], mb["valid"],
                                            dtype=dt, remat=scfg.remat, attn_impl=scfg.attn_impl)
            head = transformer.lm_head_weight(params, model_cfg).astype(dt)
            s, _, stats = sft.sft_loss(hidden, head, mb["tokens"], mb["loss_mask"],
                                       segment_ids=mb.get("segment_ids"), chunk_size=scfg.chunk_size,
                                       aggregation_mode=mode, max_len=max_len)
            return aggregation.safe_ratio(s, den), stats

        grads, loss, sums = _accumulate(loss_fn, state["params"], micro)
        new_state, grad_norm, skipped = _apply(state, grads, optimizer)
        metrics = {"loss": loss, "nll": aggregation.safe_ratio(sums["nll_sum"], sums["tokens"]),
                   "tokens": sums["tokens"],
                   "confident_frac": aggregation.safe_ratio(sums["confident"], sums["tokens"]),
                   "grad_norm": grad_norm, "update_skipped": skipped}
        if schedule is not None:
            metrics["lr"] = jnp.asarray(schedule(state["step"]), jnp.float32)
        return new_state, metrics

    jitted = _jit(step, mesh, model_cfg, optimizer)

    @functools.wraps(step)
    def call(state, batch):
        return jitted(state, device_batch(batch))   # host-only keys dropped, as in make_train_step
    return call
