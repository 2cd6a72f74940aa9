"""``mode=serve`` batching decisions (``serving.batcher.Window``) and the batcher's counters:
hand-computed arrival patterns (a lock-step burst, a steady stream, a full call), and a real
``Batcher`` fed a burst from another thread. No timing asserts (speed: benchmarks/serve_play.py)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from skillax.engine.sampler import SampleOutput
from skillax.modes.serving.batcher import Batcher, Window
from skillax.modes.serving.protocol import GenRequest


def replay(window: Window, arrivals_ms: list[float], max_rows: int = 256) -> tuple[float, int]:
    """(ms at which the first call starts, requests in it) for one-row requests arriving at
    ``arrivals_ms``: the batcher's loop evaluated at each arrival and at each wake-up it asks for."""
    first = arrivals_ms[0] / 1000
    k = 1
    now = first
    while True:
        left = window.wait_left(first, arrivals_ms[k - 1] / 1000, k, max_rows, now)
        wake = now + max(left, 0.0)
        if k < len(arrivals_ms) and arrivals_ms[k] / 1000 <= wake:   # a request arrives first
            now = arrivals_ms[k] / 1000
            k += 1
            continue
        if left <= 1e-12:  # float round-off of "now + left"
            return round(now * 1000, 6), k
        now = wake


# 40 requests over 30 ms: one every 0.75 ms (a lock-step turn's burst, parsed one after the other)
BURST = [0.75 * i for i in range(40)]


def test_quiet_window_takes_a_whole_burst():
    """quiet 20 ms: no gap of 20 ms inside the burst, so the call starts 20 ms after the last
    arrival (29.25 + 20 = 49.25 ms) with all 40."""
    assert replay(Window(quiet_s=0.020, max_wait_s=0.5), BURST) == (49.25, 40)


def test_fixed_window_splits_the_same_burst():
    """fixed 10 ms (the first server's default): the call starts at 10 ms with the requests
    that arrived by then, t = 0, 0.75, ..., 9.75 ms: 14 of 40 (the other 26 wait a whole call)."""
    assert replay(Window(window_s=0.010), BURST) == (10.0, 14)


def test_quiet_window_is_capped_by_max_wait():
    """A steady stream every 10 ms never goes quiet for 30 ms: the call starts at max_wait =
    500 ms after the first, with the 51 requests of t = 0, 10, ..., 500 ms."""
    stream = [10.0 * i for i in range(100)]
    assert replay(Window(quiet_s=0.030, max_wait_s=0.5), stream) == (500.0, 51)


def test_full_call_starts_at_once():
    """max_rows waiting: no wait, whatever the window (8 rows of 8 at t = 0..7 ms -> 7 ms)."""
    assert replay(Window(quiet_s=1.0, max_wait_s=10.0), [float(i) for i in range(20)], max_rows=8) == (7.0, 8)
    assert Window(quiet_s=1.0).wait_left(0.0, 0.0, 8, 8, 0.0) == 0.0


def test_window_rejects_negative_times():
    with pytest.raises(ValueError, match=">= 0"):
        Window(quiet_s=-1.0)


def _req(i: int) -> GenRequest:
    return GenRequest(kind="chat", model="m", prompts=[[1, 2, 3 + i]], n=1, temperature=0.4, top_p=1.0, top_k=0,
                      max_tokens=4, stop=("</action>",), seed=None, logprobs=False, tools=False)


def test_batcher_serves_a_burst_in_one_call():
    """A real Batcher, 40 requests submitted from another thread ~0.75 ms apart (quiet window
    of 300 ms, far above any gap the submitting thread leaves): one sampler call of 40 rows,
    each request answered with its own row; the counters say so."""
    calls = []

    def generate(prompts, sp, seed, step):
        calls.append(len(prompts))
        n = len(prompts)
        toks = np.array([[p[-1], 7, 0, 0] for p in prompts], np.int32)
        return SampleOutput(tokens=toks, logprobs=np.zeros((n, 4), np.float32), mask=np.ones((n, 4), np.int32),
                            stop_reason=["stop"] * n, lengths=np.full(n, 2, np.int32),
                            group=np.arange(n, dtype=np.int32), stats={"seconds": 0.0, "steps": 2})

    b = Batcher(generate, max_len=64, max_rows=256, window=Window(quiet_s=0.3, max_wait_s=30.0))
    futs = []

    def submit():
        for i in range(40):
            futs.append(b.submit(_req(i)))
            time.sleep(0.00075)

    t = threading.Thread(target=submit)
    t.start()
    t.join()
    rows = [f.result(timeout=60) for f in futs]
    b.close()
    assert calls == [40]
    assert [r[0].ids for r in rows] == [[3 + i, 7] for i in range(40)]
    assert b.stats["calls"] == 1 and b.stats["rows"] == 40 and b.stats["completion_tokens"] == 80
    assert b.stats["decode_steps"] == 2 and b.stats["submitted"] == 40


def _serve_cfg(**kw):
    from configs.serve import get_config

    c = get_config()
    for k, v in kw.items():
        c.serve[k] = v
    return c.serve


def test_serving_row_buckets():
    """pow2: 8..>= max_batch_rows (6 programs per prompt bucket for 1..256 rows instead of the
    sampler's 15); a list must reach max_batch_rows; "sampler" keeps the 1.5x points."""
    from skillax.modes.serve import serving_buckets

    assert serving_buckets(_serve_cfg(max_batch_rows=256)).batch == (8, 16, 32, 64, 128, 256)
    assert serving_buckets(_serve_cfg(max_batch_rows=140)).batch == (8, 16, 32, 64, 128, 256)
    assert serving_buckets(_serve_cfg(max_batch_rows=4)).batch == (8,)
    assert serving_buckets(_serve_cfg(max_batch_rows=64, row_buckets="4, 64")).batch == (4, 64)
    assert serving_buckets(_serve_cfg(row_buckets="sampler")).batch[:6] == (1, 2, 3, 4, 6, 8)
    with pytest.raises(ValueError, match="must reach serve.max_batch_rows=64"):
        serving_buckets(_serve_cfg(max_batch_rows=64, row_buckets="4,32"))


def test_warmup_shapes():
    """Every row bucket up to max_batch_rows' bucket x each listed prompt length (clipped to
    max_len - default_max_tokens), largest rows first; "" = no warm-up."""
    from skillax.modes.serve import serving_buckets, warmup_shapes

    s = _serve_cfg(max_batch_rows=140, default_max_tokens=128, warmup_prompt_tokens="1024,4000")
    assert warmup_shapes(s, serving_buckets(s), 4096) == [
        (256, 1024), (128, 1024), (64, 1024), (32, 1024), (16, 1024), (8, 1024),
        (256, 3968), (128, 3968), (64, 3968), (32, 3968), (16, 3968), (8, 3968)]
    s = _serve_cfg(max_batch_rows=140)
    assert warmup_shapes(s, serving_buckets(s), 4096) == []
