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

Several processes may share one folder (the arms of one GPU lease): the cache is size-bounded,
which makes JAX take a file lock around each read and write (``filelock``), and a torn entry
is only a warning and a rebuild, never a wrong program. Reading an entry still traces and
lowers the function; only the XLA build is skipped.
"""

from __future__ import annotations

import os
import pathlib

MAX_BYTES = 8 << 30          # LRU-evicted above this; also what turns on the file lock
MIN_COMPILE_S = 1.0          # programs that build faster than this are not written


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
            return environ["SKILLAX_COMPILATION_CACHE"]
        if current:
            return current
        if backend == "cpu":
            return None
        base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "skillax", "jax")
    if pathlib.Path(spec).exists() and not pathlib.Path(spec).is_dir():
        raise ValueError(f"compilation_cache={spec!r} is a file; give 'auto', 'off' or a folder")
    return spec


def enable(spec: str = "auto", backend: str | None = None, min_compile_s: float = MIN_COMPILE_S) -> str | None:
    """Turn JAX's persistent compilation cache on in this process at :func:`cache_dir`'s folder
    (created if missing). Call before the first jit build (``skillax.modes.run`` does).

    Args:
      spec: ``config.compilation_cache``.
      backend: ``jax.default_backend()`` when None.
      min_compile_s: seconds a build must take to be written (JAX's
        ``jax_persistent_cache_min_compile_time_secs``).
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
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_s))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    try:
        import filelock  # noqa: F401  (JAX locks the folder only when this imports)

        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    except ImportError:
        pass
    return path
