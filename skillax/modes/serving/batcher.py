"""Concurrent requests -> batched sampler calls, behind a bounded queue (``mode=serve``).

HTTP handler threads ``submit`` a validated :class:`~skillax.modes.serving.protocol.GenRequest`
and wait on its future; one worker thread drains the queue: it waits for more requests as
:class:`Window` says (fixed: ``window_s`` after the first waiting request; quiet: until no
request arrived for ``quiet_s``, at most ``max_wait_s`` after the first), and packs every
request that fits into as few ``Sampler.generate`` calls as possible. Requests keep queueing
while a call runs; the next call takes them at once when they are already quiet. Requests share a call when they agree on
(temperature, top_p, top_k, stop strings) -- one ``SamplingParams`` per call -- and the call
stays within ``max_rows`` rows and the cache (longest prompt + largest ``max_tokens`` <=
``max_len``); each row is then cut back to its own request's ``max_tokens`` (the row's tokens
before the cut do not depend on the cap). Rows are prompt-major, ``n`` copies per prompt.

Randomness: unseeded sampled calls use the server seed and a call counter as ``step`` (fresh
draws per call, reproducible for one server run); a request with a ``seed`` and temperature
> 0 gets a call of its own with ``seed=seed, step=0``, so its text does not depend on what
else was in flight. Greedy requests batch freely.

``submit`` raises :class:`QueueFull` when ``max_queue`` requests are already waiting (the
server answers 429 with ``Retry-After``). A failing sampler call fails only its requests
(their futures raise), never the worker thread.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from concurrent.futures import Future
from typing import Callable

from skillax.modes.serving.protocol import GenRequest, RowResult


class QueueFull(Exception):
    """The bounded request queue is full."""


@dataclasses.dataclass
class _Item:
    req: GenRequest
    future: Future
    enqueued: float


GenerateFn = Callable  # (prompts, SamplingParams, seed, step) -> SampleOutput


@dataclasses.dataclass(frozen=True)
class Window:
    """When the batcher stops collecting requests and calls the sampler.

    ``quiet_s = 0`` (fixed window, the first server's policy): call ``window_s`` after the
    oldest waiting request arrived. ``quiet_s > 0`` (quiet window): call once no request has
    arrived for ``quiet_s`` -- a burst (a lock-step agent turn: N requests sent at once that
    reach the queue over tens of ms, one HTTP parse + tokenisation after the other) becomes
    one call instead of a small first call and a second one -- but at most ``max_wait_s``
    after the oldest waiting request (a steady stream still gets served). Either way a call
    starts at once when ``max_rows`` rows wait. Measured: benchmarks/serve_play.py.
    """

    window_s: float = 0.01
    quiet_s: float = 0.0
    max_wait_s: float = 2.0

    def __post_init__(self):
        if self.window_s < 0 or self.quiet_s < 0 or self.max_wait_s < 0:
            raise ValueError(f"batch window times must be >= 0: {self}")

    def wait_left(self, first: float, last: float, rows: int, max_rows: int, now: float) -> float:
        """Seconds to keep waiting (<= 0: call now), given the arrival times (monotonic
        seconds) of the oldest (``first``) and newest (``last``) waiting requests and the
        ``rows`` they need."""
        if rows >= max_rows:
            return 0.0
        if self.quiet_s <= 0:
            return first + self.window_s - now
        return min(last + self.quiet_s, first + self.max_wait_s) - now


class Batcher:
    """See module docstring.

    Args:
      generate: ``(prompts: list[list[int]], sp: SamplingParams, seed: int, step: int) ->
        SampleOutput`` (``Sampler.generate`` bound to the params).
      max_len: the sampler's cache length.
      max_rows: most rows in one sampler call.
      max_queue: most requests waiting (not yet in a call).
      window_s: how long the worker waits for more requests after the first one (used when
        ``window`` is not given: a fixed :class:`Window`).
      window: the batching :class:`Window` (overrides ``window_s``).
      seed: server seed for unseeded sampled calls.
      compile_count: optional ``() -> int`` (``Sampler.compile_count``); its growth per call
        is counted in ``stats["compiles"]``.
      compile_seconds: optional ``() -> float``, seconds spent tracing/compiling so far
        (``stats["compile_ms"]``).
      warmup: optional ``() -> None`` run first on the worker thread (``serve.warmup_prompt_tokens``:
        compile the common shapes); requests queue meanwhile (``warming`` is True), and its
        compiles / milliseconds are counted as ``warmup_compiles`` / ``warmup_ms``.

    ``stats`` (a Counter, served by ``GET /health``): submitted, rejected, calls, rows,
    completion_tokens, compiles, and milliseconds summed over calls: ``seconds_x1000`` (the
    whole ``generate`` call), ``device_ms`` (the sampler's program + transfer, compile
    included), ``compile_ms``, ``queue_ms`` (summed over requests: enqueue -> call start),
    ``arrival_span_ms`` (per call: first to last arrival of its requests), ``decode_steps``.
    """

    def __init__(self, generate: GenerateFn, *, max_len: int, max_rows: int = 64, max_queue: int = 256,
                 window_s: float = 0.01, window: Window | None = None, seed: int = 0, compile_count: Callable[[], int] | None = None,
                 compile_seconds: Callable[[], float] | None = None, warmup: Callable[[], None] | None = None):
        if max_rows < 1 or max_queue < 1:
            raise ValueError("max_rows and max_queue must be >= 1")
        self.generate = generate
        self.max_len, self.max_rows, self.max_queue = int(max_len), int(max_rows), int(max_queue)
        self.window = window or Window(window_s=float(window_s))
        self.window_s, self.seed = self.window.window_s, int(seed)
        self._compiles = compile_count or (lambda: 0)
        self._compile_s = compile_seconds or (lambda: 0.0)
        self._queue: collections.deque[_Item] = collections.deque()
        self._cond = threading.Condition()
        self._step = 0
        self._stop = False
        self.stats = collections.Counter()
        self._warmup = warmup
        self.warming = warmup is not None
        self._thread = threading.Thread(target=self._loop, name="skillax-serve-batcher", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ public
    def submit(self, req: GenRequest) -> Future:
        if req.rows > self.max_rows:
            raise ValueError(f"the request needs {req.rows} rows (prompts x n); this server's limit is {self.max_rows}")
        fut: Future = Future()
        with self._cond:
            if len(self._queue) >= self.max_queue:
                self.stats["rejected"] += 1
                raise QueueFull(f"{len(self._queue)} requests are waiting (max_queue={self.max_queue})")
            self._queue.append(_Item(req, fut, time.monotonic()))
            self.stats["submitted"] += 1
            self._cond.notify()
        return fut

    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    def close(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout)

    # ------------------------------------------------------------------ worker
    def _loop(self) -> None:
        if self._warmup is not None:
            c0, t0 = self._compiles(), time.perf_counter()
            try:
                self._warmup()
            except Exception as e:  # noqa: BLE001 - a failed warm-up costs compiles later, nothing else
                self.stats["warmup_failed"] += 1
                logging.getLogger(__name__).warning("serve warm-up failed: %s: %s", type(e).__name__, e)
            self.stats["warmup_compiles"] += self._compiles() - c0
            self.stats["warmup_ms"] += int(1000 * (time.perf_counter() - t0))
            self.warming = False
        while True:
            with self._cond:
                while not self._queue and not self._stop:
                    self._cond.wait()
                if self._stop:
                    for item in self._queue:
                        item.future.set_exception(RuntimeError("server shutting down"))
                    self._queue.clear()
                    return
                while not self._stop:
                    left = self.window.wait_left(self._queue[0].enqueued, self._queue[-1].enqueued,
                                                 sum(i.req.rows for i in self._queue), self.max_rows,
                                                 time.monotonic())
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch = self._take()
            for group in _groups(batch, self.max_rows, self.max_len):
                self._run(group)

    def _take(self) -> list[_Item]:
        """Pop what can run now: up to max_rows rows (caller holds the lock)."""
        out, rows = [], 0
        while self._queue and rows + self._queue[0].req.rows <= self.max_rows:
            item = self._queue.popleft()
            out.append(item)
            rows += item.req.rows
        return out

    def _run(self, group: list[_Item]) -> None:
        from skillax.engine.sampling import SamplingParams

        reqs = [i.req for i in group]
        r0 = reqs[0]
        seeded = r0.seed is not None and r0.temperature > 0
        prompts = [p for r in reqs for p in r.prompts for _ in range(r.n)]
        try:
            sp = SamplingParams(temperature=r0.temperature, top_p=r0.top_p, top_k=r0.top_k,
                                max_new_tokens=max(r.max_tokens for r in reqs), n=1, stop_strings=r0.stop)
            if seeded:
                seed, step = int(r0.seed) % (2 ** 32), 0
            else:
                seed, step = self.seed, self._step
                self._step += 1
            c0, cs0, now = self._compiles(), self._compile_s(), time.monotonic()
            t0 = time.perf_counter()
            out = self.generate(prompts, sp, seed, step)
            self.stats["calls"] += 1
            self.stats["rows"] += len(prompts)
            self.stats["seconds_x1000"] += int(1000 * (time.perf_counter() - t0))
            self.stats["device_ms"] += int(1000 * float(getattr(out, "stats", {}).get("seconds", 0.0)))
            self.stats["decode_steps"] += int(getattr(out, "stats", {}).get("steps", 0))
            self.stats["compiles"] += self._compiles() - c0
            self.stats["compile_ms"] += int(1000 * (self._compile_s() - cs0))
            self.stats["queue_ms"] += int(1000 * sum(now - i.enqueued for i in group))
            self.stats["arrival_span_ms"] += int(1000 * (group[-1].enqueued - group[0].enqueued))
        except Exception as e:  # noqa: BLE001 - a failed call fails its requests only
            for item in group:
                if not item.future.done():
                    item.future.set_exception(e)
            return
        row = 0
        for item in group:
            res = []
            for _ in range(item.req.rows):
                n = int(out.lengths[row])
                ids, lps, reason = out.tokens[row, :n].tolist(), out.logprobs[row, :n].tolist(), out.stop_reason[row]
                if n > item.req.max_tokens:
                    ids, lps, reason = ids[:item.req.max_tokens], lps[:item.req.max_tokens], "length"
                res.append(RowResult(ids, [float(x) for x in lps], reason))
                row += 1
            self.stats["completion_tokens"] += sum(len(r.ids) for r in res)
            item.future.set_result(res)


def _key(req: GenRequest, i: int):
    seeded = req.seed is not None and req.temperature > 0
    return (req.temperature, req.top_p, req.top_k, req.stop, ("solo", i) if seeded else None)


def _groups(items: list[_Item], max_rows: int, max_len: int) -> list[list[_Item]]:
    """Split a batch into sampler calls (module docstring): same key, <= max_rows rows, and
    longest prompt + largest max_tokens <= max_len. Order within a call follows arrival."""
    groups: list[tuple[tuple, list[_Item], int, int, int]] = []
    for i, item in enumerate(items):
        r = item.req
        longest = max(len(p) for p in r.prompts)
        k = _key(r, i)
        for g, (key, members, rows, lp, mt) in enumerate(groups):
            if (key == k and rows + r.rows <= max_rows and max(lp, longest) + max(mt, r.max_tokens) <= max_len):
                members.append(item)
                groups[g] = (key, members, rows + r.rows, max(lp, longest), max(mt, r.max_tokens))
                break
        else:
            groups.append((k, [item], r.rows, longest, r.max_tokens))
    return [members for _, members, *_ in groups]
