"""Shared helpers for benchmarks: timing, device description and the JSONL result record.

Record fields (one JSON line per measurement in benchmarks/results/<benchmark>.jsonl):
name, shape, device, ours, reference, unit, limit, fraction_of_limit, command, date.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import shlex
import sys
import time

# $SKILLAX_RESULTS redirects the JSONL files (e.g. to $OUT on the device machine).
RESULTS = pathlib.Path(os.environ.get("SKILLAX_RESULTS") or pathlib.Path(__file__).resolve().parent / "results")
# Measured on the H200 (DESIGN.md §4): bf16 dense matmul ceiling and memory-copy bandwidth.
H200_BF16_FLOPS = 790e12
H200_HBM_BYTES_PER_S = 4.3e12


def device_name() -> str:
    import jax

    d = jax.devices()[0]
    return f"{d.platform}:{getattr(d, 'device_kind', d.platform)} x{len(jax.devices())}"


def time_fn(fn, warmup: int = 2, iters: int = 5) -> float:
    """Median seconds per call of ``fn()`` (which must block until its result is ready)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def record(benchmark: str, name: str, shape: dict, ours: float, reference: float | None, unit: str,
           limit: float | None, fraction_of_limit: float | None, **extra) -> dict:
    rec = dict(name=name, shape=shape, device=device_name(), ours=ours, reference=reference, unit=unit,
               limit=limit, fraction_of_limit=fraction_of_limit,
               command="python " + " ".join(shlex.quote(a) for a in sys.argv),
               date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **extra)
    print(json.dumps(rec), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / f"{benchmark}.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    return rec
