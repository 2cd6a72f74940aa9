"""When RL stops: a minutes budget and an absolute deadline (``config.max_train_minutes``,
``config.train_until_unix``).

``max_train_minutes`` > 0: stop after the step whose end passes that many minutes of RL (the
step in flight finishes; its checkpoint is written; evaluation follows). ``train_until_unix`` >
0: an absolute wall-clock deadline (``time.time()`` seconds) shared by processes that must
all finish their evaluation inside one lease of a machine: a step is not started when the
last step's duration would carry it past the deadline. Either 0 = off.
``train_until_file``: a file holding a deadline in the same unit; when it exists and parses
it overrides ``train_until_unix`` (read at every check, so an operator can move the deadline
of running processes, e.g. once the evaluation time of a shared machine is known).
"""

from __future__ import annotations

import time


class RLClock:
    """See module docstring. ``start()`` when RL begins; ``stop_reason(last_step_s)`` after each
    step returns None to continue or a one-line reason to stop."""

    def __init__(self, max_train_minutes: float = 0.0, train_until_unix: float = 0.0, now=time.time,
                 train_until_file: str = ""):
        self.budget_s = 60.0 * float(max_train_minutes or 0.0)
        self.until = float(train_until_unix or 0.0)
        if self.budget_s < 0 or self.until < 0:
            raise ValueError(f"max_train_minutes and train_until_unix must be >= 0, got "
                             f"{max_train_minutes}, {train_until_unix}")
        self._now = now
        self.until_file = str(train_until_file or "")
        self.t0 = None

    @classmethod
    def from_config(cls, cfg) -> "RLClock":
        return cls(float(cfg.get("max_train_minutes", 0.0) or 0.0), float(cfg.get("train_until_unix", 0.0) or 0.0),
                   train_until_file=str(cfg.get("train_until_file", "") or ""))

    def deadline(self) -> float:
        """The absolute deadline in force (0 = none): the file's value when readable."""
        if self.until_file:
            try:
                with open(self.until_file, encoding="utf-8") as f:
                    return float(f.read().strip())
            except (OSError, ValueError):
                pass
        return self.until

    def start(self) -> "RLClock":
        self.t0 = self._now()
        return self

    @property
    def elapsed_s(self) -> float:
        return 0.0 if self.t0 is None else self._now() - self.t0

    def stop_reason(self, last_step_s: float) -> str | None:
        """None to run another step, else why RL stops now."""
        if self.budget_s > 0 and self.elapsed_s > self.budget_s:
            return f"max_train_minutes={self.budget_s / 60:g} reached after {self.elapsed_s:.0f} s of RL"
        until = self.deadline()
        if until > 0 and self._now() + max(float(last_step_s), 0.0) > until:
            return (f"train_until deadline: another step (~{last_step_s:.0f} s) would end after "
                    f"{time.strftime('%H:%M:%S', time.gmtime(until))} UTC")
        return None


def next_step_estimate(step_s: float, compile_s: float) -> float:
    """The clock's estimate of the next RL step, seconds: the last step's wall time ``step_s``
    less the jax trace / lower / compile time ``compile_s`` spent inside it
    (``skillax.compile_cache.compile_timer``), since the next step reuses those programs; >= 0.
    Without it a first step's builds stop RL early: campaign 17 (H200, 2026-12-06) took 104 s
    for step 0, ~35 s of sampler builds and most of a 54 s update the train step's compile, and
    the clock stopped RL after one step with ~100 s before its deadline."""
    return max(float(step_s) - float(compile_s), 0.0)
