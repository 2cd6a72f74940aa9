"""``mode=serve``: an OpenAI-compatible HTTP server backed by skillax's sampler.

    python -m skillax.main --config configs/serve.py [--config.model.path=...] \
        [--config.serve.checkpoint=<run workdir>] [--config.serve.port=8000]

Serves ``/v1/chat/completions``, ``/v1/completions`` and ``/v1/models`` for one model: any
policy ``load_policy`` loads (``smollm2``, ``qwen2.5-coder-0.5b``, an HF folder, ``random:...``),
optionally with the policy weights of a run's latest checkpoint (``serve.checkpoint``: the
run's workdir or its ``checkpoints`` folder; ``model.path`` must be the run's base model).
Concurrent requests are batched into sampler calls (``skillax.modes.serving.batcher``); the
protocol, its limits and error bodies are in ``skillax.modes.serving.protocol`` / ``.http``.
Binds 127.0.0.1 unless ``serve.host`` says otherwise; with ``serve.api_key_env`` naming a set
environment variable, requests need that key as a Bearer token.

Once listening it prints one JSON line ``{"url": ..., "model": ...}`` and, with a workdir,
writes it to ``<workdir>/serve.json``; it serves until interrupted or ``serve.max_seconds``.
"""
from __future__ import annotations

import copy
import json
import os
import pathlib
import threading
import time

from skillax.compile_cache import compile_timer
from skillax.models.registry import load_policy, resolve_dtype


def restore_policy_params(path: str | os.PathLike, cfg, mesh=None):
    """Policy params of the latest checkpoint under ``path`` (a run workdir or its
    ``checkpoints`` folder), as saved by ``methods.common.engine.PolicyEngine`` (state
    ``{"params", "opt_state", "step"}``; only ``params`` is kept). Shapes are checked against
    ``cfg``. Raises FileNotFoundError (no checkpoint) / ValueError (a different model)."""
    import jax
    import numpy as np
    import orbax.checkpoint as ocp

    from skillax.models.params import abstract_params

    root = pathlib.Path(path)
    folder = root / "checkpoints" if (root / "checkpoints").is_dir() else root
    mgr = ocp.CheckpointManager(folder.absolute(), item_names=("state", "host", "files"))
    step = mgr.latest_step()
    if step is None:
        raise FileNotFoundError(f"no checkpoint under {folder}")
    state = mgr.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))["state"]
    mgr.close()
    params = state.get("params") if isinstance(state, dict) else None
    want = abstract_params(cfg)
    if params is None or jax.tree.structure(params) != jax.tree.structure(want):
        raise ValueError(f"checkpoint {folder} step {step} does not hold policy params of this model "
                         f"({cfg.architecture}, {cfg.num_layers} layers)")
    bad = [jax.tree_util.keystr(k) for k, a, b in zip(
        [k for k, _ in jax.tree_util.tree_leaves_with_path(want)], jax.tree.leaves(params), jax.tree.leaves(want))
        if tuple(np.shape(a)) != tuple(b.shape)]
    if bad:
        raise ValueError(f"checkpoint params have other shapes than {cfg.architecture}: {bad[:4]}")
    if mesh is not None:
        from skillax.models.params import param_shardings
        return jax.device_put(params, param_shardings(cfg, mesh)), step
    return jax.device_put(params, jax.devices()[0]), step


def serving_buckets(s):
    """The sampler's shape buckets for serving (``serve.row_buckets``): "pow2" (default) rows
    8, 16, 32, ... up to >= ``max_batch_rows`` -- 6 row sizes from 1 to 256 instead of the
    sampler's 15 (1, 2, 3, 4, 6, ... 192, 256), each one compiled program per prompt bucket;
    a lock-step agent turn's row count falls as episodes end, so a served eval walks through
    every size (campaign 3: compile-bound); "sampler": the sampler's own buckets; or a comma
    list of row sizes (must reach ``max_batch_rows``). Prompt, new-token and cache buckets
    stay the sampler's. Raises ValueError on a list that does not reach max_batch_rows."""
    from skillax.engine.buckets import Buckets, powers_of_two

    spec, top = str(s.get("row_buckets", "pow2")).strip(), int(s.max_batch_rows)
    if spec == "sampler":
        return Buckets()
    rows = powers_of_two(8, top) if spec == "pow2" else tuple(sorted({int(x) for x in spec.split(",") if x.strip()}))
    if not rows or rows[-1] < top:
        raise ValueError(f"serve.row_buckets={spec!r} must reach serve.max_batch_rows={top}")
    return Buckets(batch=rows)


def warmup_shapes(s, buckets, max_len: int) -> list[tuple[int, int]]:
    """(rows, prompt tokens) compiled at start-up (``serve.warmup_prompt_tokens``, a comma list
    of prompt lengths; "" = none): every row bucket up to ``max_batch_rows``'s for each length
    (clipped to ``max_len - default_max_tokens``), largest rows first."""
    lens = [int(x) for x in str(s.get("warmup_prompt_tokens", "") or "").split(",") if x.strip()]
    room = int(max_len) - int(s.default_max_tokens)
    if lens and room < 1:
        raise ValueError(f"serve.default_max_tokens={s.default_max_tokens} leaves no prompt room in max_len {max_len}")
    top = buckets.pick("batch", int(s.max_batch_rows))
    rows = [b for b in buckets.batch if b <= top]
    return [(r, min(max(1, L), room)) for L in lens for r in sorted(rows, reverse=True)]


def warm_up(sampler, params, shapes, max_tokens: int, vocab_size: int) -> None:
    """Run one sampled call (temperature 1, one stop string: the agents' request pattern, the
    same program as any temperature > 0 with top_p 1 / top_k 0 and any stop list) per shape,
    so those programs are compiled before the first request needs them. Rows get distinct
    prompts (a shared prefill would be another program)."""
    from skillax.engine.sampling import SamplingParams

    sp = SamplingParams(temperature=1.0, max_new_tokens=int(max_tokens), stop_strings=("</action>",))
    hi = max(2, int(vocab_size) - 1)
    for rows, length in shapes:
        prompts = [[1 + (7919 * i + 104729 * j) % (hi - 1) for j in range(length)] for i in range(rows)]
        sampler.generate(params, prompts, sp, seed=0, step=0)


def make_sampler(cfg, mcfg, tokenizer, dtype, buckets):
    """The server's sampler with the engines' ``model.*`` sampler keys: ``sampler_memory_gb``
    (a batch predicted above it runs as several row chunks, same samples; 0 = off),
    ``share_prefill``, ``cache_attention`` and ``sampler_xla`` (``methods.common.engine.PolicyEngine``), over
    the serving row ``buckets``. Raises ValueError for a negative memory budget."""
    from skillax.engine.sampler import Sampler, parse_compiler_options

    return Sampler(mcfg, tokenizer, max_len=int(cfg.model.max_len), dtype=dtype, buckets=buckets,
                   share_prefill=bool(cfg.model.get("share_prefill", True)),
                   cache_attention=str(cfg.model.get("cache_attention", "auto")),
                   memory_budget=int(float(cfg.model.get("sampler_memory_gb", 0.0)) * 2**30),
                   compiler_options=parse_compiler_options(cfg.model.get("sampler_xla", "")))


def build_service(cfg):
    """The ``Service`` of a serve config (no socket yet); ``.sampler`` / ``.params`` are the
    sampler and weights behind it."""
    import jax

    from skillax.modes.serving.batcher import Batcher, Window
    from skillax.modes.serving.http import Service
    from skillax.modes.serving.protocol import Limits

    s = cfg.serve
    dtype = resolve_dtype(cfg.model.dtype)
    params, mcfg, tokenizer = load_policy(cfg.model.path, "float32", seed=int(cfg.seed),
                                          max_len=int(cfg.model.max_len))
    if s.checkpoint:
        params, _ = restore_policy_params(s.checkpoint, mcfg)
    params = jax.jit(lambda p: jax.tree.map(lambda x: x.astype(dtype), p))(params)
    # the sampler decodes on the batcher thread: its own tokenizer copy (HF fast tokenizers
    # must not be used from two threads at once)
    buckets = serving_buckets(s)
    shapes = warmup_shapes(s, buckets, int(cfg.model.max_len))
    sampler = make_sampler(cfg, mcfg, copy.deepcopy(tokenizer), dtype, buckets)

    def generate(prompts, sp, seed, step):
        return sampler.generate(params, prompts, sp, seed=seed, step=step)

    batcher = Batcher(generate, max_len=int(cfg.model.max_len), max_rows=int(s.max_batch_rows),
                      max_queue=int(s.max_queue), seed=int(cfg.seed),
                      window=Window(window_s=float(s.batch_window_ms) / 1000.0,
                                    quiet_s=float(s.get("batch_quiet_ms", 50.0)) / 1000.0,
                                    max_wait_s=float(s.get("batch_max_wait_ms", 2000.0)) / 1000.0),
                      warmup=(lambda: warm_up(sampler, params, shapes, int(s.default_max_tokens), int(mcfg.vocab_size)))
                      if shapes else None,
                      compile_count=lambda: sampler.compile_count, compile_seconds=compile_timer())
    limits = Limits(model_id=str(s.model_name or pathlib.Path(str(cfg.model.path)).name or "skillax"),
                    max_len=int(cfg.model.max_len), vocab_size=int(mcfg.vocab_size),
                    default_max_tokens=int(s.default_max_tokens), max_n=int(s.max_n),
                    max_stop=sampler.max_stop_strings, max_stop_bytes=sampler.max_stop_bytes,
                    enable_thinking=bool(s.enable_thinking))
    key = os.environ.get(str(s.api_key_env)) if s.api_key_env else None
    if s.api_key_env and not key:
        raise ValueError(f"serve.api_key_env={s.api_key_env!r} is set but that environment variable is empty")
    service = Service(tokenizer, limits, batcher, api_key=key, request_timeout_s=float(s.request_timeout_s),
                      max_body_bytes=int(s.max_body_bytes), tokenizer_copies=int(s.get("tokenizer_copies", 4)))
    service.sampler, service.params = sampler, params   # for in-process comparisons (tests, benchmarks)
    return service


def start(cfg, workdir=None):
    """Build and start serving in a background thread; returns (server, service, info)."""
    from skillax.modes.serving.http import make_server

    service = build_service(cfg)
    server = make_server(service, str(cfg.serve.host), int(cfg.serve.port))
    host, port = server.server_address[:2]
    info = {"url": f"http://{host}:{port}/v1", "model": service.limits.model_id}
    threading.Thread(target=server.serve_forever, name="skillax-serve-http", daemon=True).start()
    if workdir:
        pathlib.Path(workdir).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(workdir) / "serve.json").write_text(json.dumps(info))
    return server, service, info


def run(cfg, workdir=None):
    server, service, info = start(cfg, workdir)
    print(json.dumps(info), flush=True)
    limit = float(cfg.serve.get("max_seconds", 0) or 0)
    t0 = time.monotonic()
    try:
        while not limit or time.monotonic() - t0 < limit:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
        service.batcher.close()
    return {**info, "stats": dict(service.batcher.stats)}
