"""Shared test set-up: 8 fake CPU devices, offline hub, and the ../shared data location."""
import os
import pathlib
import tempfile

# LLVM -O0 for XLA's generated CPU code: the suite is dominated by compiling many small programs
# (tiny models), and -O0 compiles them ~1/3 faster (CPU time of tests/engine/test_memory.py 47 ->
# 31 s, tests/models/test_smollm2_greedy.py 48 -> 27 s; the 0.5B real-weights forward of
# tests/models/test_qwen25_coder.py ~ +8 %). Matmuls / convolutions are library calls either way,
# and the HLO (fusion, buffer assignment, sharding: what tests inspect) does not change. A CI
# that sets XLA_FLAGS itself gets its own; subprocess workers inherit these (tests/_xla.py).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_backend_optimization_level=0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# one persistent compilation cache per test session: the many engines / samplers over the same
# tiny models compile identical programs, and a cache hit skips XLA's ~10 s CPU compile
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="skillax-test-jax-cache-"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "1")

import pytest  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
HAVE_SHARED = (SHARED / "data").is_dir()

needs_shared = pytest.mark.skipif(
    not HAVE_SHARED, reason=f"../shared/data not found at {SHARED} (real data lives only there)"
)


@pytest.fixture
def shared_dir() -> pathlib.Path:
    if not HAVE_SHARED:
        pytest.skip(f"../shared/data not found at {SHARED}")
    return SHARED
