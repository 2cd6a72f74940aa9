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


def flatten(tree, prefix=""):
    """{"/a/0/b": numpy array} of a nested dict / list tree (checkpoint states)."""
    import numpy as np

    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            out.update(flatten(v, f"{prefix}/{k}"))
        return out
    if isinstance(tree, (list, tuple)):
        out = {}
        for i, v in enumerate(tree):
            out.update(flatten(v, f"{prefix}/{i}"))
        return out
    return {prefix: np.asarray(tree)}


def checkpoint_params(work):
    """(latest step, flattened params) of ``work/checkpoints``."""
    from skillax.rl.checkpoint import Checkpointer

    with Checkpointer(pathlib.Path(work) / "checkpoints") as ck:
        step = ck.latest_step()
        state, _, _ = ck.restore_arrays()
    return step, flatten(state["params"])


def crash_restart_compare(run, make_cfg, tmp_path, capsys, sft_marker: str, crash=None, reference=True):
    """Issue 23, item 5: a run that dies in RL step 0 does not repeat its SFT when started again.

    Reference run (``reference``: uninterrupted, in ``tmp_path/ref``); crashed run in
    ``tmp_path/run`` (``model.sampler_memory_gb`` = ``TOO_SMALL_GB``: raises in RL step 0 after
    its SFT; or ``crash(cfg, workdir)``, which must raise there): its SFT summary line
    (``sft_marker``) printed once, ``<workdir>/warmstart/DONE.json`` written, no checkpoint;
    restart with the budget lifted (a key a resume may change): the SFT not repeated, the warm
    start loaded from ``<workdir>/warmstart/``, an RL checkpoint of step 0 -- whose params equal
    the reference's bit for bit (with ``reference``). Returns the runs' stdout."""
    import numpy as np
    import pytest

    out_ref = ""
    if reference:
        run(make_cfg(), str(tmp_path / "ref"))
        out_ref = capsys.readouterr().out
        assert out_ref.count(sft_marker) == 1

    work = tmp_path / "run"
    if crash is None:
        bad = make_cfg()
        bad.model.sampler_memory_gb = TOO_SMALL_GB
        with pytest.raises(ValueError, match="sampler memory"):
            run(bad, str(work))
    else:
        crash(make_cfg(), str(work))
    out_crash = capsys.readouterr().out
    assert out_crash.count(sft_marker) == 1 and (work / "warmstart" / "DONE.json").is_file()
    assert not (work / "checkpoints").is_dir() or not any(p.name.isdigit() for p in (work / "checkpoints").iterdir())

    run(make_cfg(), str(work))
    out_restart = capsys.readouterr().out
    assert sft_marker not in out_restart                                   # SFT not repeated
    assert f"warm start loaded from {work / 'warmstart'}" in out_restart

    s_got, p_got = checkpoint_params(work)
    if not reference:
        assert s_got == 0 and p_got
        return out_ref, out_crash, out_restart
    s_ref, p_ref = checkpoint_params(tmp_path / "ref")
    assert s_ref == s_got == 0 and sorted(p_ref) == sorted(p_got)
    for k in p_ref:
        np.testing.assert_array_equal(p_ref[k], p_got[k], err_msg=k)
    return out_ref, out_crash, out_restart
