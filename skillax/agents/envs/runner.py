"""Batched environment runner: many episodes stepped in parallel worker processes.

Games are CPU-bound Python (textworld's PDDL engine, fast-downward, Inform interpreters),
so each worker is a separate process (``forkserver`` by default, never ``fork``: the parent
may hold jax/XLA threads) talking to the parent over a pipe. Episode *slots* are assigned
round-robin to workers (slot ``i`` -> worker ``i % n_workers``); with ``n_workers >=
len(tasks)`` every slot has its own process.

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

Scripts that create a pool must guard their entry point with ``if __name__ == "__main__"``
(worker start methods re-import the main module).
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import multiprocessing.connection as mpc
import time
import traceback
from typing import Any, Callable, Sequence

from skillax.agents.envs.base import EnvSpec, Task

StepResult = tuple[str, float, bool, dict]


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
    raise ValueError(f"unknown command {kind!r}")


def _worker_main(conn, spec) -> None:
    """Worker loop: receive a list of (kind, slot, arg); for each send ("begin", slot) then
    ("ok", slot, result) or ("error", slot, message)."""
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
            try:
                conn.send(("ok", slot, _do(envs, spec, kind, slot, arg)))
            except Exception as e:  # noqa: BLE001 -- reported to the parent, episode fails
                tb = traceback.format_exc(limit=4)
                envs.pop(slot, None)
                conn.send(("error", slot, f"{type(e).__name__}: {e}\n{tb}"))
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
      n_workers: worker processes (0 = in-process).
      max_steps: optional per-episode step cap on top of the environment's own.
      step_timeout_s / reset_timeout_s: per-call wall-clock limits (workers only). A replay
        after a restart gets ``reset_timeout_s + len(history) * step_timeout_s``.
      start_method: ``"forkserver"`` (default) or ``"spawn"``.
    """

    def __init__(self, make_env_fn_spec: EnvSpec | str | Callable, n_workers: int = 0, *,
                 max_steps: int | None = None, step_timeout_s: float = 60.0,
                 reset_timeout_s: float = 300.0, start_method: str = "forkserver"):
        if isinstance(make_env_fn_spec, str):
            from skillax.agents.envs import env_spec

            make_env_fn_spec = env_spec(make_env_fn_spec)
        if n_workers < 0:
            raise ValueError(f"n_workers must be >= 0, got {n_workers}")
        if start_method not in ("forkserver", "spawn"):
            raise ValueError(f"start_method must be 'forkserver' or 'spawn', got {start_method!r}")
        self.spec = make_env_fn_spec
        self.n_workers = int(n_workers)
        self.max_steps = max_steps
        self.step_timeout_s = float(step_timeout_s)
        self.reset_timeout_s = float(reset_timeout_s)
        self._ctx = mp.get_context(start_method) if n_workers else None
        self._workers: list[_Worker | None] = [None] * self.n_workers
        self._local_envs: dict[int, Any] = {}
        self._slots: list[_Slot] = []
        self.restarts = 0  # number of worker restarts so far (crashes + timeouts)

    # -- public API ------------------------------------------------------------------
    def reset_batch(self, tasks: Sequence[Task]) -> list[tuple[str, dict]]:
        """Start one episode per task (slot ``i`` plays ``tasks[i]``).

        Returns ``[(observation, info)]`` in task order. A slot whose reset failed has
        ``info["failed"] = True`` and ``info["fail_reason"]``, and counts as done.
        """
        if not tasks:
            raise ValueError("reset_batch needs at least one task")
        self._slots = [_Slot(task=t, done=False) for t in tasks]
        res = self._execute([("reset", i, t) for i, t in enumerate(tasks)])
        out = []
        for i, (status, payload) in sorted(res.items()):
            s = self._slots[i]
            if status == "ok":
                obs, info = payload
                s.last = (obs, 0.0, False, info)
                out.append((obs, info))
            else:
                s.done = True
                s.last = self._failed(i, "", payload)
                out.append((s.last[0], s.last[3]))
        return out

    def step_batch(self, actions: Sequence[str | None]) -> list[StepResult]:
        """Step every live episode with its action (``actions[i]`` for slot ``i``).

        Finished slots ignore their action (may be None) and return their last result
        again with ``info["skipped"] = True``. Raises ValueError on a length mismatch.
        """
        if len(actions) != len(self._slots):
            raise ValueError(f"got {len(actions)} actions for {len(self._slots)} episodes")
        items = [("step", i, a) for i, a in enumerate(actions) if not self._slots[i].done]
        res = self._execute(items) if items else {}
        out: list[StepResult] = []
        for i, s in enumerate(self._slots):
            if i not in res:
                obs, _, _, info = s.last
                out.append((obs, 0.0, True, {**info, "skipped": True}))
                continue
            status, payload = res[i]
            if status == "ok":
                obs, reward, done, info = payload
                if self.max_steps is not None and not done and len(s.actions) >= self.max_steps:
                    done, info = True, {**info, "truncated": True}
                s.done, s.last = bool(done), (obs, float(reward), bool(done), info)
            else:
                s.done, s.last = True, self._failed(i, s.last[0] if s.last else "", payload)
            out.append(s.last)
        return out

    def end_episodes(self, slots: Sequence[int]) -> None:
        """Mark episodes finished without calling their environments (e.g. the agent gave
        up); later ``step_batch`` calls skip them."""
        for i in slots:
            self._slots[i].done = True

    @property
    def done(self) -> list[bool]:
        """Per-slot done flags of the current batch."""
        return [s.done for s in self._slots]

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

    def _record(self, kind: str, slot: int, arg: Any, status: str) -> None:
        if status == "ok" and kind == "step":
            self._slots[slot].actions.append(arg)

    def _execute(self, items: list[tuple[str, int, Any]]) -> dict[int, tuple[str, Any]]:
        """Run items; returns slot -> ("ok", result) | ("failed", reason)."""
        if self.n_workers == 0:
            out = {}
            for kind, slot, arg in items:
                try:
                    out[slot] = ("ok", _do(self._local_envs, self.spec, kind, slot, arg))
                except Exception as e:  # noqa: BLE001
                    self._local_envs.pop(slot, None)
                    out[slot] = ("failed", f"{type(e).__name__}: {e}")
                self._record(kind, slot, arg, out[slot][0])
            return out
        return self._execute_workers(items)

    def _timeout(self, kind: str, arg: Any) -> float:
        if kind == "reset":
            return self.reset_timeout_s
        if kind == "replay":
            return self.reset_timeout_s + len(arg[1]) * self.step_timeout_s
        return self.step_timeout_s

    def _send(self, wi: int, items: list) -> None:
        w = self._workers[wi]
        if w is not None and not w.proc.is_alive():  # died while idle: restore its episodes
            w.kill()
            self.restarts += 1
            w = self._workers[wi] = None
            items = self._replays(wi, items, {}) + list(items)
        if w is None:
            w = self._workers[wi] = _Worker(self._ctx, self.spec)
        w.outstanding = list(items)
        w.current, w.began = None, time.monotonic()
        w.parent_conn.send(items)

    def _replays(self, wi: int, items: list, out: dict) -> list:
        """Replay items for the live episodes of worker ``wi`` that ``items`` does not reset
        and that have not failed in this call (``out``)."""
        resets = {it[1] for it in items if it[0] == "reset"}
        reps = []
        for s in range(wi, len(self._slots), self.n_workers):
            st = self._slots[s]
            if st.done or st.task is None or s in resets or out.get(s, ("ok",))[0] == "failed":
                continue
            reps.append(("replay", s, (st.task, list(st.actions))))
        return reps

    def _execute_workers(self, items):
        out: dict[int, tuple[str, Any]] = {}
        by_worker: dict[int, list] = {}
        for it in items:
            by_worker.setdefault(it[1] % self.n_workers, []).append(it)
        for wi, its in by_worker.items():
            self._send(wi, its)
        busy = set(by_worker)
        while busy:
            conns = {self._workers[wi].parent_conn: wi for wi in busy}
            now = time.monotonic()
            deadlines = []
            for wi in busy:
                w = self._workers[wi]
                kind, _, arg = self._current_item(w)
                deadlines.append(w.began + self._timeout(kind, arg) - now)
            ready = mpc.wait(list(conns), timeout=max(0.0, min(deadlines)) + 0.01)
            for conn in ready:
                wi = conns[conn]
                w = self._workers[wi]
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    w.proc.join(1)
                    code = w.proc.exitcode
                    self._restart(wi, out, f"worker process died (exit code {code})")
                    if not self._workers[wi].outstanding:
                        busy.discard(wi)
                    continue
                if msg[0] == "begin":
                    w.current, w.began = msg[1], time.monotonic()
                    continue
                status, slot, payload = msg
                item = next(it for it in w.outstanding if it[1] == slot)
                w.outstanding.remove(item)
                w.current, w.began = None, time.monotonic()
                if out.get(slot, ("ok",))[0] == "failed":
                    pass  # its replay already failed; keep that reason
                elif item[0] != "replay":
                    out[slot] = ("ok", payload) if status == "ok" else ("failed", payload)
                    self._record(item[0], slot, item[2], status)
                elif status != "ok":
                    out[slot] = ("failed", f"lost when its worker restarted; replay failed: {payload}")
                if not w.outstanding:
                    busy.discard(wi)
            now = time.monotonic()
            for wi in list(busy):
                w = self._workers[wi]
                kind, slot, arg = self._current_item(w)
                limit = self._timeout(kind, arg)
                if now - w.began > limit:
                    self._restart(wi, out, f"timeout: {kind} took longer than {limit:g} s")
                elif not w.proc.is_alive() and not w.parent_conn.poll():
                    self._restart(wi, out, f"worker process died (exit code {w.proc.exitcode})")
                if not self._workers[wi].outstanding:
                    busy.discard(wi)
        return out

    @staticmethod
    def _current_item(w: _Worker):
        if w.current is not None:
            for it in w.outstanding:
                if it[1] == w.current:
                    return it
        return w.outstanding[0]

    def _restart(self, wi: int, out: dict, reason: str) -> None:
        """Kill worker ``wi``, fail its running item, restart it, replay its other live
        episodes and resend its unfinished items."""
        w = self._workers[wi]
        kind, slot, arg = self._current_item(w)
        w.kill()
        self.restarts += 1
        out[slot] = ("failed", f"{reason} (while running {kind} of slot {slot})")
        rest = [it for it in w.outstanding if it[1] != slot]
        self._workers[wi] = None
        todo = self._replays(wi, rest, out) + rest
        if todo:
            self._send(wi, todo)
        else:
            self._workers[wi] = _Worker(self._ctx, self.spec)
