"""XLA_FLAGS for test subprocesses (multi-process workers): this process's flags
(tests/conftest.py: the LLVM optimisation level, ...) with another fake CPU device count."""
import os

DEVICE_COUNT = "--xla_force_host_platform_device_count"


def xla_flags(devices: int) -> str:
    """``--xla_force_host_platform_device_count=<devices>`` plus every other flag of this
    process's ``XLA_FLAGS``."""
    rest = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(DEVICE_COUNT)]
    return " ".join([f"{DEVICE_COUNT}={int(devices)}", *rest])
