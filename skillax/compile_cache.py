"""JAX's persistent compilation cache for skillax runs (``config.compilation_cache``, issue 17).

Every distinct sampler / train-step shape is one XLA program (``engine.buckets``); on the H200
each costs 3-25 s to build for SmolLM2, and a Skill1 arm built 5-6 of them after step 0 in
campaign 9 (44-84 s of a 12-minute run, ``benchmarks/results/learning/campaign_2026-12-03b``),
and the same programs again in every arm that shares the machine and after every resume. JAX
writes each built program to a folder keyed by the program, the backend, the jax version and the
compile options, and reads it back instead of building it again
(https://docs.jax.dev/en/latest/persistent_compilation_cache.html). Values:

* ``"auto"`` (default): ``$SKILLAX_COMPILATION_CACHE`` if set, else the folder JAX already has
  (``$JAX_COMPILATION_CACHE_DIR`` or ``jax.config``), else ``$XDG_CACHE_HOME/skillax/jax``
  (``~/.cache/skillax/jax``) on GPU and TPU; off on CPU, where tests and the 2-core CI build
  small programs in well under a second each.
* ``""`` or ``"off"``: off.
* a folder: that folder, on any backend (e.g. a shared disk for every host of a pod).

Several processes may share one folder (the arms of one GPU lease). The cache is left
unbounded, as JAX's default is: a size bound (``jax_compilation_cache_max_size``) turns on
eviction, which reads a ``-atime`` file for every entry on every write, and an entry written by a
process without the bound (``benchmarks/device/gpu_check.py``, any plain JAX script given the same
``JAX_COMPILATION_CACHE_DIR``) has none, so every later write would fail (a warning only). Without
the bound there is no file lock: a process that reads an entry another one is still writing
gets a deserialization warning and builds the program itself. An entry left truncated by a
process killed while writing stays and costs a rebuild (with a warning) in every later run;
delete the folder to clear it. Reading an entry still traces and lowers the function; only
the XLA build is skipped.

Call :func:`enable` before the first jit build of the process: JAX sets its cache up once,
at the first build, and ignores later changes of the folder (``skillax.modes.run`` calls it
before any model loads).
"""

from __future__ import annotations

import os
import pathlib


def cache_dir(spec: str, backend: str, environ=os.environ, current: str | None = None) -> str | None:
    """The folder ``config.compilation_cache = spec`` means on ``backend`` ("cpu" | "gpu" |
    "tpu" | ...), or None for off (module docstring); ``current``: the folder JAX is already
    configured with (``jax.config.jax_compilation_cache_dir``), kept by "auto". Raises
    ValueError for a value that is neither "auto", "off", "" nor a folder path (e.g. a path
    naming an existing file)."""
    spec = str(spec).strip()
    if spec in ("", "off"):
        return None
    if spec == "auto":
        if environ.get("SKILLAX_COMPILATION_CACHE"):
            return os.path.expanduser(environ["SKILLAX_COMPILATION_CACHE"])
        if current:
            return current
        if backend == "cpu":
            return None
        base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "skillax", "jax")
    path = os.path.expanduser(spec)
    if pathlib.Path(path).exists() and not pathlib.Path(path).is_dir():
        raise ValueError(f"compilation_cache={spec!r} is a file; give 'auto', 'off' or a folder")
    return path


def enable(spec: str = "auto", backend: str | None = None, min_compile_s: float | None = None) -> str | None:
    """Turn JAX's persistent compilation cache on in this process at :func:`cache_dir`'s folder
    (created if missing), or off for "off" / "" (also over ``JAX_COMPILATION_CACHE_DIR``). Only
    effective before the process's first jit build (module docstring); ``skillax.modes.run``
    calls it before any model loads.

    Args:
      spec: ``config.compilation_cache``.
      backend: ``jax.default_backend()`` when None.
      min_compile_s: seconds a build must take to be written (JAX's
        ``jax_persistent_cache_min_compile_time_secs``); None keeps JAX's value (default 1 s).
    Returns: the folder, or None when off. Raises ValueError as :func:`cache_dir`.
    """
    import jax

    path = cache_dir(spec, backend or jax.default_backend(), current=jax.config.jax_compilation_cache_dir)
    if path is None:
        if str(spec).strip() in ("", "off"):
            jax.config.update("jax_compilation_cache_dir", None)   # off also overrides JAX_COMPILATION_CACHE_DIR
        return None
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    if min_compile_s is not None:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_s))
    return path


_COMPILE_S = [0.0]
_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration")


def compile_timer():
    """``() -> seconds`` jax has spent tracing, lowering and compiling in this process so far
    (``jax.monitoring`` duration events; the listener is registered once per process). Used by
    ``modes.serve`` (its stats) and by Skill1's RL clock (``methods.skill1.loop``: a step's own
    build time is not expected again in the next step)."""
    import jax

    if not getattr(compile_timer, "registered", False):
        def listen(event, duration, **_):
            if event in _COMPILE_EVENTS:
                _COMPILE_S[0] += float(duration)
        jax.monitoring.register_event_duration_secs_listener(listen)
        compile_timer.registered = True
    return lambda: _COMPILE_S[0]
