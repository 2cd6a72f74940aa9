"""config.compilation_cache (skillax.compile_cache): which folder each value means, bad values
rejected before a model loads, and a second process reading a program the first one built."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from skillax import compile_cache, config_defaults
from skillax.config_check import ConfigError, check_config


def test_cache_dir_values():
    env = {"XDG_CACHE_HOME": "/x/cache"}
    assert compile_cache.cache_dir("auto", "gpu", env) == "/x/cache/skillax/jax"
    assert compile_cache.cache_dir("auto", "tpu", env) == "/x/cache/skillax/jax"
    assert compile_cache.cache_dir("auto", "cpu", env) is None          # CPU: off unless asked
    env2 = {**env, "SKILLAX_COMPILATION_CACHE": "/shared/xla"}
    assert compile_cache.cache_dir("auto", "cpu", env2) == "/shared/xla"   # the variable wins, any backend
    home_cache = os.path.join(os.path.expanduser("~"), ".cache", "skillax", "jax")
    assert compile_cache.cache_dir("auto", "gpu", {}) == home_cache
    for off in ("", "off", " off "):
        assert compile_cache.cache_dir(off, "gpu", env) is None
    assert compile_cache.cache_dir("/some/folder", "cpu", env) == "/some/folder"
    assert compile_cache.cache_dir("~/xla", "cpu", env) == os.path.join(os.path.expanduser("~"), "xla")
    # a folder JAX already has (JAX_COMPILATION_CACHE_DIR) is kept by "auto", on any backend
    assert compile_cache.cache_dir("auto", "cpu", env, current="/jax/own") == "/jax/own"
    assert compile_cache.cache_dir("auto", "gpu", env, current="/jax/own") == "/jax/own"
    assert compile_cache.cache_dir("auto", "gpu", env2, current="/jax/own") == "/shared/xla"
    assert compile_cache.cache_dir("off", "gpu", env, current="/jax/own") is None


def test_a_file_is_refused_before_a_model_loads(tmp_path):
    f = tmp_path / "not_a_folder"
    f.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        compile_cache.cache_dir(str(f), "gpu")
    cfg = config_defaults.base("sft")
    cfg.compilation_cache = str(f)
    with pytest.raises(ConfigError, match="compilation_cache=.* is a file"):
        check_config(cfg)


PROBE = textwrap.dedent("""
    import sys, jax, jax.numpy as jnp
    from skillax import compile_cache
    hits = []
    jax.monitoring.register_event_listener(
        lambda name, **kw: hits.append(name) if name == "/jax/compilation_cache/cache_hits" else None)
    assert compile_cache.enable(sys.argv[1], min_compile_s=0.0) == sys.argv[1]
    f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())
    print(float(f(jnp.ones((64, 64)))), len(hits))
""")


def test_second_process_reads_the_program_the_first_built(tmp_path):
    """Two fresh processes with one cache folder: the first builds and writes (0 hits), the second
    reads the same program back (>= 1 hit) and computes the same value. The folder already holds
    an entry a plain-JAX process wrote (no ``-atime`` file, as ``gpu_check.py`` leaves on the
    device): writing beside it must still work (it would fail under a size bound)."""
    folder = tmp_path / "xla"
    folder.mkdir()
    (folder / "jit_other-0123-cache").write_bytes(b"x" * 16)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", PROBE, str(folder)], capture_output=True, text=True, env=env,
                           timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        assert "Error writing persistent compilation cache" not in p.stderr, p.stderr[-2000:]
        outs.append(p.stdout.split())
    assert outs[0] == ["4096.0", "0"]
    assert outs[1][0] == "4096.0" and int(outs[1][1]) >= 1
    assert len([n for n in os.listdir(folder) if n.endswith("-cache")]) >= 2


def test_auto_keeps_jax_compilation_cache_dir_and_off_clears_it(tmp_path):
    code = textwrap.dedent("""
        import jax
        from skillax import compile_cache
        print(compile_cache.enable("auto", backend="cpu"), jax.config.jax_compilation_cache_dir)
        print(compile_cache.enable("off"), jax.config.jax_compilation_cache_dir)
    """)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "own")}
    env.pop("SKILLAX_COMPILATION_CACHE", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    own = str(tmp_path / "own")
    assert p.stdout.split("\n")[:2] == [f"{own} {own}", "None None"]
