"""Where a jitted call's device time goes: a kernel summary from one ``jax.profiler`` trace.

    from benchmarks.kernel_profile import kernel_summary
    summary = kernel_summary(lambda: sampler.generate(params, prompts, sp))

Traces one call, reads the XSpace with ``jax.profiler.ProfileData`` (no TensorBoard needed)
and sums the events of the device planes' stream lines (``/device:GPU:*``, lines
``Stream #...``: one event per kernel or memcpy). ``busy_s`` is the summed kernel time;
``span_s`` is first kernel start to last kernel end; ``1 - busy/span`` is the share of the
call the GPU sat idle between kernels (launch latency, host syncs). On CPU there are no
device planes: the summary reports the planes and lines it saw and zero kernels.
"""

from __future__ import annotations

import collections
import glob
import re
import tempfile
import time

import jax

_DIGITS = re.compile(r"\d+")


def kernel_summary(fn, top: int = 15) -> dict:
    """Run ``fn()`` once under the profiler and summarise the device kernels.

    Returns: dict(wall_s, kernels (count), busy_s, span_s, idle_fraction, top: list of
    [name with digits folded to '#', count, total_s], lines: {plane/line: events}).
    """
    logdir = tempfile.mkdtemp(prefix="skillax-prof-")
    with jax.profiler.trace(logdir):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        wall = time.perf_counter() - t0
    path = sorted(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True))[-1]
    data = jax.profiler.ProfileData.from_file(path)
    per_name: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])
    lines, n, busy, first, last = {}, 0, 0.0, None, None
    for plane in data.planes:
        for line in plane.lines:
            events = list(line.events)
            lines[f"{plane.name}/{line.name}"] = len(events)
            if not (plane.name.startswith("/device:") and line.name.startswith("Stream")):
                continue
            for ev in events:
                n += 1
                busy += ev.duration_ns * 1e-9
                first = ev.start_ns if first is None else min(first, ev.start_ns)
                last = ev.end_ns if last is None else max(last, ev.end_ns)
                rec = per_name[_DIGITS.sub("#", ev.name)[:120]]
                rec[0] += 1
                rec[1] += ev.duration_ns * 1e-9
    span = (last - first) * 1e-9 if n else 0.0
    ranked = sorted(per_name.items(), key=lambda kv: -kv[1][1])[:top]
    return dict(wall_s=round(wall, 4), kernels=n, busy_s=round(busy, 4), span_s=round(span, 4),
                idle_fraction=round(1 - busy / span, 4) if span else None,
                top=[[k, c, round(t, 5)] for k, (c, t) in ranked], lines=lines)
