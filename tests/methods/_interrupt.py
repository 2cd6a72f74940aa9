"""Interrupting a method run at chosen or random points (issue 23, item 1).

``Killed`` is a ``BaseException`` so no ``except Exception`` in the code under test swallows
it; the run's ``finally`` blocks still run (closing files and pools), which a SIGKILL would
skip -- the loops keep no commit logic in ``finally`` blocks, so the on-disk state after an
interruption is the state a kill at the same point leaves.

``CallCounter`` kills at the n-th Python call into ``skillax`` after it is armed (a random
point chosen by index, reproducible from a seed, covering every function boundary of a step
and its checkpoint save).

``TOO_SMALL_GB`` as ``model.sampler_memory_gb`` makes a run fail for real at its first policy
sampling call (the sampler raises "... alone needs X GiB of sampler memory"): after the SFT
stages, which sample nothing with the policy at that size (issue 23, item 5's crash in RL step 0).
"""

import pathlib
import sys

import skillax

SKILLAX_DIR = str(pathlib.Path(skillax.__file__).parent)
TOO_SMALL_GB = 1e-5      # ~10 KiB: less than one row of any sampling call (logits alone: 6 V 4 bytes)


class Killed(BaseException):
    """The simulated kill."""


class CallCounter:
    """``sys.setprofile`` hook counting calls into skillax; raises Killed at call ``kill_at``
    (None: count only). :meth:`arm` starts counting, :meth:`disarm` stops."""

    def __init__(self, kill_at: int | None = None):
        self.kill_at, self.count, self.armed = kill_at, 0, False

    def _hook(self, frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(SKILLAX_DIR):
            self.count += 1
            if self.kill_at is not None and self.count >= self.kill_at:
                sys.setprofile(None)
                self.armed = False
                raise Killed(f"killed at skillax call {self.count}: {frame.f_code.co_name}")

    def arm(self):
        if not self.armed:
            self.armed = True
            sys.setprofile(self._hook)

    def disarm(self):
        sys.setprofile(None)
        self.armed = False


def run_killed(run, *args):
    """``run(*args)``; returns the Killed (or other) exception, or None when it finished."""
    try:
        run(*args)
    except BaseException as e:  # noqa: B036 -- the simulated kill is a BaseException
        sys.setprofile(None)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return e
    return None
