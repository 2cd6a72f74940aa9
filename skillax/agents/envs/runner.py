"""Batched environment runner: many episodes stepped in parallel worker processes.

Games are CPU-bound Python (textworld's PDDL engine, fast-downward, Inform interpreters),
so each worker is a separate process (``forkserver`` by default, never ``fork``: the parent
may hold jax/XLA threads) talking to the parent over a pipe. Episode *slots* are placed on
workers at each batch start (``placement``): "group" (default) keeps the episodes of one
task together -- slots sorted by task (first appearance), cut into ``n_workers`` contiguous
runs of equal size -- so the G rollouts of a task mostly share a process and its cached
game translation (:mod:`skillax.agents.envs.pddl_speedups`: a second reset of a game costs
~30 ms, the first ~0.5 s); "round_robin" puts slot ``i`` on worker ``i % n_workers``. With
``n_workers >= len(tasks)`` every slot has its own process either way. A worker closes the
environments of slots it no longer holds when a batch starts.

Failure handling:

* an exception inside ``reset``/``step`` ends that episode as failed (``info["failed"]``,
  ``info["fail_reason"]`` with the exception); the worker keeps serving;
* a worker that dies (segfault, ``os._exit``, OOM kill) or exceeds the per-call timeout is
  killed and restarted; the episode it was running ends failed ("worker died ..." /
  "timeout ..."), the other live episodes it hosted are restored by replaying their task and
  action history (games are deterministic), and the batch continues;
* ``max_steps`` caps every episode (in addition to the environment's own cap): the step
  reaching it returns ``done=True`` with ``info["truncated"] = True``.

``n_workers=0`` runs the environments in-process (tests, tiny runs): same API and failure
reporting for exceptions, but no timeouts and no protection against hard crashes.
``n_workers="auto"`` (or -1) sizes the pool to the cores this process may use
(:func:`resolve_workers`); workers start lazily, so more workers than episodes cost nothing.

Two ways to drive a batch:

* lock-step: ``reset_batch(tasks)`` then ``step_batch(actions)`` per turn (every live
  episode steps, the call returns when the slowest has);
* asynchronous (overlapped play, ``skillax.agents.agent_loop.play_episodes(overlap=K)``):
  ``start_batch(tasks)`` submits the resets, ``submit({slot: action})`` submits steps of some
  episodes, and ``poll(timeout)`` returns the results that have arrived, so the caller can
  generate the next turn of some episodes while the workers step others. A worker runs its
  items in submission order; results are the same as lock-step for the same actions.

Scripts that create a pool must guard their entry point with ``if __name__ == "__main__"``
(worker start methods re-import the main module).
"""
from __future__ import annotations

import collections
import dataclasses
import math
import multiprocessing as mp
import os
import multiprocessing.connection as mpc
import time
import traceback
from typing import Any, Callable, Sequence

from skillax.agents.envs.base import EnvSpec, Task

StepResult = tuple[str, float, bool, dict]


def available_cores() -> int:
    """CPU cores this process may run on (``sched_getaffinity``; ``os.cpu_count`` elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def resolve_workers(n_workers: int | str, n_episodes: int | None = None) -> int:
    """Worker processes for ``n_workers``: an int >= 0 as is (0 = in-process); ``"auto"`` or
    -1 = the available cores minus one (the parent runs the sampler's host side), at least 1,
    and at most ``n_episodes`` when given. ``$SKILLAX_ENV_WORKERS`` (an int) caps "auto"
    (several runs sharing one machine). Raises ValueError on anything else.
    """
    if isinstance(n_workers, str):
        v = n_workers.strip().lower()
        if v == "auto":
            n_workers = -1
        else:
            try:
                n_workers = int(v)
            except ValueError:
                raise ValueError(f"n_workers must be an int >= 0, -1 or 'auto', got {n_workers!r}") from None
    if isinstance(n_workers, bool) or not isinstance(n_workers, int):
        raise ValueError(f"n_workers must be an int >= 0, -1 or 'auto', got {n_workers!r}")
    if n_workers >= 0:
        return n_workers
    if n_workers != -1:
        raise ValueError(f"n_workers must be >= 0, -1 or 'auto', got {n_workers}")
    n = max(1, available_cores() - 1)
    cap = os.environ.get("SKILLAX_ENV_WORKERS")
    if cap:
        n = min(n, max(1, int(cap)))
    if n_episodes is not None:
        n = min(n, max(1, int(n_episodes)))
    return n


def _build(spec: Any):
    if isinstance(spec, EnvSpec):
        return spec.build()
    if callable(spec):
        return spec()
    raise TypeError(f"env spec must be an EnvSpec, registered name or callable, got {type(spec).__name__}")


def _do(envs: dict, spec: Any, kind: str, slot: int, arg: Any):
    """Run one item in the current process. Returns the env call's result."""
    if kind in ("reset", "replay"):
        if slot not in envs:
            envs[slot] = _build(spec)
        env = envs[slot]
        if kind == "reset":
            return env.reset(arg)
        task, actions = arg
        out = env.reset(task)
        for a in actions:
            out = env.step(a)
        return out
    if kind == "step":
        if slot not in envs:
            raise RuntimeError(f"slot {slot} has no environment (never reset)")
        return envs[slot].step(arg)
    if kind == "keep":  # a new batch: close the environments of slots placed elsewhere
        for s in [s for s in envs if s not in arg]:
            try:
                envs.pop(s).close()
            except Exception:  # noqa: BLE001
                pass
        return None
    raise ValueError(f"unknown command {kind!r}")


def _worker_main(conn, spec) -> None:
    """Worker loop: receive a list of (kind, slot, arg); for each send ("begin", slot) then
    ("ok", slot, result, seconds) or ("error", slot, message, seconds)."""
    envs: dict[int, Any] = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg == "close":
            break
        for kind, slot, arg in msg:
            conn.send(("begin", slot))
            t0 = time.perf_counter()
            try:
                res = _do(envs, spec, kind, slot, arg)
            except Exception as e:  # noqa: BLE001 -- reported to the parent, episode fails
                tb = traceback.format_exc(limit=4)
                envs.pop(slot, None)
                conn.send(("error", slot, f"{type(e).__name__}: {e}\n{tb}", time.perf_counter() - t0))
            else:
                conn.send(("ok", slot, res, time.perf_counter() - t0))
    for env in envs.values():
        try:
            env.close()
        except Exception:  # noqa: BLE001
            pass


@dataclasses.dataclass
class _Slot:
    task: Task | None = None
    actions: list = dataclasses.field(default_factory=list)
    done: bool = True
    last: StepResult | None = None


class _Worker:
    """One worker process; ``outstanding`` are the items sent and not answered yet, in the
    order it runs them; ``current`` the slot it announced ("begin"), ``began`` when the
    current item started (or the worker was last idle)."""

    def __init__(self, ctx, spec):
        self.parent_conn, child_conn = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child_conn, spec), daemon=True)
        self.proc.start()
        child_conn.close()
        self.current: int | None = None
        self.began = 0.0
        self.outstanding: list[tuple[str, int, Any]] = []

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.join(5)
        finally:
            self.parent_conn.close()


class EnvPool:
    """Step many environments in parallel.

    Args:
      make_env_fn_spec: :class:`EnvSpec`, a registered environment name (see
        ``skillax.agents.envs.ENV_REGISTRY``) or a picklable zero-argument callable
        returning an environment.
      n_workers: worker processes: 0 = in-process, an int > 0, or "auto" / -1 = sized to the
        cores (:func:`resolve_workers`).
      max_steps: optional per-episode step cap on top of the environment's own.
      step_timeout_s / reset_timeout_s: per-call wall-clock limits (workers only). A replay
        after a restart gets ``reset_timeout_s + len(history) * step_timeout_s``.
      start_method: ``"forkserver"`` (default) or ``"spawn"``.
      placement: "group" (default) or "round_robin" (module docstring); results are the same.

    Counters: ``restarts`` (worker restarts: crashes + timeouts), ``failed_episodes``
    (episodes ended as failed by an exception, a crash or a timeout); ``seconds[kind]`` /
    ``counts[kind]``: time the environments spent in resets / steps (measured where they run).
    """

    def __init__(self, make_env_fn_spec: EnvSpec | str | Callable, n_workers: int | str = 0, *,
                 max_steps: int | None = None, step_timeout_s: float = 60.0,
                 reset_timeout_s: float = 300.0, start_method: str = "forkserver",
                 placement: str = "group"):
        if isinstance(make_env_fn_spec, str):
            from skillax.agents.envs import env_spec

            make_env_fn_spec = env_spec(make_env_fn_spec)
        n_workers = resolve_workers(n_workers)
        if start_method not in ("forkserver", "spawn"):
            raise ValueError(f"start_method must be 'forkserver' or 'spawn', got {start_method!r}")
        if placement not in ("group", "round_robin"):
            raise ValueError(f"placement must be 'group' or 'round_robin', got {placement!r}")
        self.placement = placement
        self._place: list[int] = []                # slot -> worker of the current batch
        self.spec = make_env_fn_spec
        self.n_workers = int(n_workers)
        self.max_steps = max_steps
        self.step_timeout_s = float(step_timeout_s)
        self.reset_timeout_s = float(reset_timeout_s)
        self._ctx = mp.get_context(start_method) if n_workers else None
        self._workers: list[_Worker | None] = [None] * self.n_workers
        self._local_envs: dict[int, Any] = {}
        self._slots: list[_Slot] = []
        self._inflight: dict[int, str] = {}        # slot -> "reset" | "step" awaiting a result
        self._arrived: dict[int, StepResult] = {}  # results not yet returned by poll()
        self._lost: dict[int, str] = {}            # idle live slots whose state was lost
        self.restarts = 0  # number of worker restarts so far (crashes + timeouts)
        self.failed_episodes = 0
        self.seconds = {"reset": 0.0, "step": 0.0, "replay": 0.0}
        self.counts = {"reset": 0, "step": 0, "replay": 0}
        self._recent = {"reset": collections.deque(maxlen=64), "step": collections.deque(maxlen=256)}
        # durations of recent generate calls, recorded by play_episodes(overlap="auto")
        self.policy_call_s: collections.deque = collections.deque(maxlen=16)

    # -- public API: lock-step ---------------------------------------------------------
    def reset_batch(self, tasks: Sequence[Task]) -> list[tuple[str, dict]]:
        """Start one episode per task (slot ``i`` plays ``tasks[i]``) and wait for all.

        Returns ``[(observation, info)]`` in task order. A slot whose reset failed has
        ``info["failed"] = True`` and ``info["fail_reason"]``, and counts as done.
        """
        self.start_batch(tasks)
        res = self._wait(set(range(len(tasks))))
        return [(res[i][0], res[i][3]) for i in range(len(tasks))]

    def step_batch(self, actions: Sequence[str | None]) -> list[StepResult]:
        """Step every live episode with its action (``actions[i]`` for slot ``i``).

        Finished slots ignore their action (may be None) and return their last result
        again with ``info["skipped"] = True``. Raises ValueError on a length mismatch.
        """
        if len(actions) != len(self._slots):
            raise ValueError(f"got {len(actions)} actions for {len(self._slots)} episodes")
        live = {i: a for i, a in enumerate(actions) if not self._slots[i].done}
        self.submit(live)
        res = self._wait(set(live))
        out: list[StepResult] = []
        for i, s in enumerate(self._slots):
            if i in res:
                out.append(res[i])
            else:
                obs, _, _, info = s.last
                out.append((obs, 0.0, True, {**info, "skipped": True}))
        return out

    # -- public API: asynchronous --------------------------------------------------------
    def start_batch(self, tasks: Sequence[Task]) -> None:
        """Submit one reset per task (slot ``i`` plays ``tasks[i]``) and return at once.

        Results come from :meth:`poll` as ``(observation, 0.0, failed, info)``. Items still
        running from a previous batch are waited for (under their timeouts) and dropped.
        """
        if not tasks:
            raise ValueError("reset_batch needs at least one task")
        self._drain()
        self._slots = [_Slot(task=t, done=False) for t in tasks]
        self._arrived.clear()
        self._lost.clear()
        self._place = self.place(tasks)
        self._dispatch([("reset", i, t) for i, t in enumerate(tasks)], keep=True)

    def started_for(self, tasks: Sequence[Task]) -> bool:
        """True when the last :meth:`start_batch` was for exactly these tasks (by id, in slot
        order), no step has been played on it and every slot's reset is still running or its
        result unread, i.e. ``play_episodes(..., started=True)`` can consume them."""
        return (len(self._slots) == len(tasks)
                and all(sl.task is not None and sl.task.id == t.id and not sl.actions
                        and (i in self._inflight or i in self._arrived)
                        for i, (sl, t) in enumerate(zip(self._slots, tasks))))

    def place(self, tasks: Sequence[Task]) -> list[int]:
        """Worker of each slot for a batch of ``tasks`` (``placement``; [] in-process)."""
        W, n = self.n_workers, len(tasks)
        if W == 0:
            return []
        if self.placement == "round_robin":
            return [i % W for i in range(n)]
        first: dict = {}
        for i, t in enumerate(tasks):
            first.setdefault(getattr(t, "id", i), i)
        order = sorted(range(n), key=lambda i: (first[getattr(tasks[i], "id", i)], i))
        per = math.ceil(n / W)
        out = [0] * n
        for k, i in enumerate(order):
            out[i] = k // per
        return out

    def submit(self, actions: dict[int, str | None]) -> None:
        """Submit one step per ``{slot: action}`` and return at once (results via :meth:`poll`).

        A slot that is already done gets its last result again (``info["skipped"]``), one
        whose state was lost with a crashed worker gets its failure -- both at the next poll.
        Raises ValueError for an unknown slot or one with a result still pending.
        """
        items = []
        for i, a in actions.items():
            if not 0 <= i < len(self._slots):
                raise ValueError(f"slot {i} is not in the current batch of {len(self._slots)}")
            if i in self._inflight or i in self._arrived:
                raise ValueError(f"slot {i} already has a result pending (poll it first)")
            s = self._slots[i]
            if s.done:
                obs, _, _, info = s.last
                self._arrived[i] = (obs, 0.0, True, {**info, "skipped": True})
            elif i in self._lost:
                self._inflight[i] = "step"
                self._finish(i, "step", "failed", self._lost.pop(i), a)
            else:
                self._inflight[i] = "step"
                items.append(("step", i, a))
        if items:
            self._dispatch(items)

    def poll(self, timeout: float | None = 0.0) -> dict[int, StepResult]:
        """Results that arrived since the last poll, ``{slot: result}``.

        ``timeout``: seconds to wait for at least one result when none has arrived yet
        (0 = do not wait; None = until one arrives, or return {} when nothing is in flight).
        Worker deaths and timeouts are handled while waiting (the episode concerned fails).
        """
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while not self._arrived and self._inflight:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            self._pump(left)
        if not self._arrived and self._inflight and timeout == 0:
            self._pump(0.0)
        out, self._arrived = self._arrived, {}
        return out

    @property
    def mean_step_s(self) -> float | None:
        """Mean seconds one environment step took so far (None before the first)."""
        return self.seconds["step"] / self.counts["step"] if self.counts["step"] else None

    def typical_s(self, kind: str = "step") -> float | None:
        """Median seconds of the recent environment ``kind`` items ("step": last 256,
        "reset": last 64), robust to a worker descheduled mid-item on a loaded machine;
        None before the first."""
        if not self._recent.get(kind):
            return None
        xs = sorted(self._recent[kind])
        return xs[len(xs) // 2]

    @property
    def typical_step_s(self) -> float | None:
        return self.typical_s("step")

    @property
    def in_flight(self) -> set[int]:
        """Slots with a submitted reset or step whose result has not arrived yet."""
        return set(self._inflight)

    def end_episodes(self, slots: Sequence[int]) -> None:
        """Mark episodes finished without calling their environments (e.g. the agent gave
        up); later ``step_batch`` calls skip them."""
        for i in slots:
            self._slots[i].done = True

    @property
    def done(self) -> list[bool]:
        """Per-slot done flags of the current batch."""
        return [s.done for s in self._slots]

    def start_workers(self, n: int | None = None) -> None:
        """Start up to ``n`` (default all) worker processes now instead of at the first
        reset (their imports then overlap with whatever the caller does next)."""
        for wi in range(min(self.n_workers, self.n_workers if n is None else n)):
            if self._workers[wi] is None:
                self._workers[wi] = _Worker(self._ctx, self.spec)

    def close(self) -> None:
        """Stop the workers and close in-process environments (idempotent)."""
        for i, w in enumerate(self._workers):
            if w is None:
                continue
            try:
                w.parent_conn.send("close")
                w.proc.join(5)
            except (OSError, BrokenPipeError):
                pass
            if w.proc.is_alive():
                w.kill()
            else:
                w.parent_conn.close()
            self._workers[i] = None
        for env in self._local_envs.values():
            try:
                env.close()
            except Exception:  # noqa: BLE001
                pass
        self._local_envs.clear()
        self._inflight.clear()

    def __enter__(self) -> "EnvPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------
    def _failed(self, slot: int, obs: str, reason: str) -> StepResult:
        s = self._slots[slot]
        info = {"won": False, "admissible_commands": [], "step": len(s.actions), "invalid": False,
                "failed": True, "fail_reason": reason, "task_id": s.task.id if s.task else None}
        return (obs, 0.0, True, info)

    def _finish(self, slot: int, kind: str, status: str, payload: Any, arg: Any) -> None:
        """Turn a worker answer for an in-flight reset/step into the slot's result."""
        s = self._slots[slot]
        del self._inflight[slot]
        if status != "ok":
            s.done, s.last = True, self._failed(slot, s.last[0] if s.last else "", payload)
            self.failed_episodes += 1
        elif kind == "reset":
            obs, info = payload
            s.last = (obs, 0.0, False, info)
        else:
            s.actions.append(arg)
            obs, reward, done, info = payload
            if self.max_steps is not None and not done and len(s.actions) >= self.max_steps:
                done, info = True, {**info, "truncated": True}
            s.done, s.last = bool(done), (obs, float(reward), bool(done), info)
        self._arrived[slot] = s.last

    def _lose(self, slot: int, reason: str) -> None:
        """A live episode's state was lost (its worker restarted and the replay failed): its
        pending request fails now, or its next one will."""
        if slot in self._inflight:
            self._finish(slot, self._inflight[slot], "failed", reason, None)
        elif not self._slots[slot].done:
            self._lost[slot] = reason

    def _wait(self, slots: set[int]) -> dict[int, StepResult]:
        """Block until every slot in ``slots`` has a result; return those (others stay queued)."""
        got: dict[int, StepResult] = {}
        while True:
            for i in list(self._arrived):
                if i in slots:
                    got[i] = self._arrived.pop(i)
            if len(got) == len(slots) or not self._inflight:
                break
            self._pump(None)
        missing = slots - set(got)
        if missing:  # pragma: no cover - internal invariant
            raise RuntimeError(f"slots {sorted(missing)} have no result")
        return got

    def _drain(self) -> None:
        """Wait until no worker has work left (results dropped), e.g. before a new batch."""
        while self._busy():
            self._pump(None)
        self._inflight.clear()
        self._arrived.clear()

    def _dispatch(self, items: list[tuple[str, int, Any]], keep: bool = False) -> None:
        """Send items to their workers (or run them in-process now). ``keep``: a batch
        start -- every worker first closes the environments of slots it no longer holds."""
        for it in items:
            self._inflight[it[1]] = it[0]
        if self.n_workers == 0:
            for kind, slot, arg in items:
                t0 = time.perf_counter()
                try:
                    res = ("ok", _do(self._local_envs, self.spec, kind, slot, arg))
                except Exception as e:  # noqa: BLE001
                    self._local_envs.pop(slot, None)
                    res = ("failed", f"{type(e).__name__}: {e}")
                self._timed(kind, time.perf_counter() - t0)
                self._finish(slot, kind, res[0], res[1], arg)
            return
        by_worker: dict[int, list] = {}
        if keep:
            for wi in range(self.n_workers):
                if self._workers[wi] is not None:
                    mine = frozenset(s for s, w in enumerate(self._place) if w == wi)
                    by_worker[wi] = [("keep", -1, mine)]
        for it in items:
            by_worker.setdefault(self._place[it[1]], []).append(it)
        for wi, its in by_worker.items():
            self._send(wi, its)

    def _timeout(self, kind: str, arg: Any) -> float:
        if kind == "reset":
            return self.reset_timeout_s
        if kind == "replay":
            return self.reset_timeout_s + len(arg[1]) * self.step_timeout_s
        return self.step_timeout_s

    def _send(self, wi: int, items: list) -> None:
        w = self._workers[wi]
        if w is not None and not w.outstanding and not w.proc.is_alive():
            # died while idle: restore its live episodes first
            w.kill()
            self.restarts += 1
            w = self._workers[wi] = None
            items = self._replays(wi, items) + list(items)
        if w is None:
            w = self._workers[wi] = _Worker(self._ctx, self.spec)
        if not w.outstanding:
            w.current, w.began = None, time.monotonic()
        w.outstanding.extend(items)
        try:
            w.parent_conn.send(items)
        except (BrokenPipeError, OSError):
            pass  # died while busy: the next _pump sees it and restarts it with these items

    def _replays(self, wi: int, items: list) -> list:
        """Replay items for the live episodes of worker ``wi`` that ``items`` does not reset."""
        resets = {it[1] for it in items if it[0] == "reset"}
        reps = []
        for s in (s for s, w in enumerate(self._place) if w == wi):
            st = self._slots[s]
            if st.done or st.task is None or s in resets or s in self._lost:
                continue
            if s in self._inflight and self._inflight[s] == "reset":
                continue
            reps.append(("replay", s, (st.task, list(st.actions))))
        return reps

    def _busy(self) -> list[int]:
        return [wi for wi, w in enumerate(self._workers) if w is not None and w.outstanding]

    def _pump(self, timeout: float | None) -> None:
        """Wait up to ``timeout`` (None: no limit but the items' deadlines) for worker
        messages and process them; restart workers that died or ran past their deadline."""
        busy = self._busy()
        if not busy:
            if self._inflight:  # internal invariant: every in-flight item sits at a worker
                raise RuntimeError(f"slots {sorted(self._inflight)} are in flight on no worker")
            return
        conns = {self._workers[wi].parent_conn: wi for wi in busy}
        now = time.monotonic()
        deadlines = []
        for wi in busy:
            w = self._workers[wi]
            kind, _, arg = self._current_item(w)
            deadlines.append(w.began + self._timeout(kind, arg) - now)
        wait = max(0.0, min(deadlines)) + 0.01
        if timeout is not None:
            wait = min(wait, max(0.0, timeout))
        ready = mpc.wait(list(conns), timeout=wait)
        for conn in ready:
            wi = conns[conn]
            w = self._workers[wi]
            while w is self._workers[wi] and w.outstanding and conn.poll():
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    w.proc.join(1)
                    self._restart(wi, f"worker process died (exit code {w.proc.exitcode})")
                    break
                self._on_message(w, msg)
        now = time.monotonic()
        for wi in self._busy():
            w = self._workers[wi]
            kind, slot, arg = self._current_item(w)
            limit = self._timeout(kind, arg)
            if now - w.began > limit:
                self._restart(wi, f"timeout: {kind} took longer than {limit:g} s")
            elif not w.proc.is_alive() and not w.parent_conn.poll():
                self._restart(wi, f"worker process died (exit code {w.proc.exitcode})")

    def _on_message(self, w: _Worker, msg) -> None:
        if msg[0] == "begin":
            w.current, w.began = msg[1], time.monotonic()
            return
        status, slot, payload = msg[:3]
        item = next(it for it in w.outstanding if it[1] == slot)
        w.outstanding.remove(item)
        w.current, w.began = None, time.monotonic()
        kind, _, arg = item
        if len(msg) > 3:
            self._timed(kind, float(msg[3]))
        if kind == "keep":
            pass
        elif kind == "replay":
            if status != "ok":
                self._lose(slot, f"lost when its worker restarted; replay failed: {payload}")
        elif self._inflight.get(slot) == kind:
            self._finish(slot, kind, "ok" if status == "ok" else "failed", payload, arg)
        # else: a late answer for a request already failed (its replay failed): dropped

    def _timed(self, kind: str, seconds: float) -> None:
        if kind in self.seconds:
            self.seconds[kind] += seconds
            self.counts[kind] += 1
        if kind in self._recent:
            self._recent[kind].append(seconds)

    @staticmethod
    def _current_item(w: _Worker):
        if w.current is not None:
            for it in w.outstanding:
                if it[1] == w.current:
                    return it
        return w.outstanding[0]

    def _restart(self, wi: int, reason: str) -> None:
        """Kill worker ``wi``, fail its running item's episode, restart it, replay its other
        live episodes and resend its unfinished items."""
        w = self._workers[wi]
        kind, slot, arg = self._current_item(w)
        w.kill()
        self.restarts += 1
        why = f"{reason} (while running {kind} of slot {slot})"
        if kind == "replay":
            self._lose(slot, f"lost when its worker restarted; replay failed: {why}")
        elif self._inflight.get(slot) == kind:
            self._finish(slot, kind, "failed", why, arg)
        rest = [it for it in w.outstanding if it[1] != slot and it[0] not in ("replay", "keep")]
        self._workers[wi] = None
        todo = self._replays(wi, rest) + rest
        if todo:
            self._send(wi, todo)
        else:
            self._workers[wi] = _Worker(self._ctx, self.spec)
