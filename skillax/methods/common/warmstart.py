"""A method's warm start saved once and shared by the arms of an experiment.

The learning protocol (benchmarks/results/learning/PROTOCOL.md) compares arms that start
from *the same* SFT warm start. GPU SFT is not bit-reproducible, so re-running it per arm
would give each arm a slightly different policy; instead one process runs the warm-start
stages and saves them here, and every arm loads them (``config.warmstart``):

* ``save_dir``: after the method's SFT stages, write the policy's fp32 parameters, the
  frozen copies the method made (executor / worker), host files (e.g. an evidence stream)
  and a JSON summary; the folder is complete once ``DONE.json`` exists (written last,
  atomically), so a reader never loads half a warm start.
* ``load_dir``: skip the SFT stages and start from the saved state (fresh optimiser state;
  a checkpoint in the run's own workdir still wins: resume). ``wait_s`` > 0: wait up to that
  many seconds for ``DONE.json`` (arms launched together with the warm-start process).

Layout: ``<dir>/policy/`` (orbax, step 0: ``{"params": fp32 tree}``, host = summary),
``<dir>/frozen/<name>/`` (orbax, sampler-dtype tree), ``<dir>/files/<name>`` (bytes),
``<dir>/DONE.json``.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import time
from typing import Any, Mapping

from skillax.rl.checkpoint import Checkpointer

DONE = "DONE.json"


class WarmStartError(RuntimeError):
    """A warm-start folder that is missing, incomplete or does not match the run."""


class WarmStart:
    """See the module docstring. ``directory``: the warm-start folder."""

    def __init__(self, directory: str | os.PathLike):
        if not str(directory):
            raise ValueError("WarmStart needs a directory")
        self.dir = pathlib.Path(directory)

    def exists(self) -> bool:
        """Whether a complete warm start is saved here."""
        return (self.dir / DONE).is_file()

    def summary(self) -> dict:
        """The saved summary (``DONE.json``); raises WarmStartError when incomplete."""
        if not self.exists():
            raise WarmStartError(f"no complete warm start in {self.dir} (no {DONE})")
        return json.loads((self.dir / DONE).read_text(encoding="utf-8"))

    def wait(self, timeout_s: float, poll_s: float = 2.0) -> None:
        """Block until the warm start is complete; WarmStartError after ``timeout_s``."""
        t0 = time.monotonic()
        while not self.exists():
            if time.monotonic() - t0 > timeout_s:
                raise WarmStartError(f"warm start {self.dir} not complete after {timeout_s:.0f} s")
            time.sleep(poll_s)

    def save(self, engine, *, frozen: Mapping[str, Any] | None = None, files: Mapping[str, bytes] | None = None,
             summary: Mapping[str, Any] | None = None) -> None:
        """Save the engine's current fp32 params, ``frozen`` sampler-dtype trees, ``files``
        and a JSON ``summary`` (the method's SFT metrics), replacing an older warm start.

        Several processes (issue 21): every process calls it (orbax's multi-process save of
        the params); process 0 alone clears the folder and writes the files and ``DONE.json``.
        ``frozen`` trees are per-process sampler replicas there: NotImplementedError."""
        from skillax import collectives, process

        if process.count() > 1 and frozen:
            raise NotImplementedError("a warm start with frozen copies from several processes (issue 21)")
        if process.is_writer():
            if self.dir.exists():
                shutil.rmtree(self.dir)
            self.dir.mkdir(parents=True)
        collectives.barrier(f"warmstart-cleared-{self.dir}")
        with Checkpointer(self.dir / "policy", max_to_keep=1) as ck:
            ck.save(0, {"params": engine.state["params"]}, {"model": str(engine.cfg.model.path)})
        for name, tree in (frozen or {}).items():
            with Checkpointer(self.dir / "frozen" / name, max_to_keep=1) as ck:
                ck.save(0, tree, {"name": name})
        if not process.is_writer():
            collectives.barrier(f"warmstart-done-{self.dir}")
            return
        for name, blob in (files or {}).items():
            if "/" in name or name.startswith("."):
                raise ValueError(f"warm-start file name {name!r} must be a plain file name")
            p = self.dir / "files" / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(bytes(blob))
        done = {"model": str(engine.cfg.model.path), "frozen": sorted(frozen or {}), "files": sorted(files or {}),
                "summary": dict(summary or {}), "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = self.dir / (DONE + ".tmp")
        tmp.write_text(json.dumps(done, indent=2, default=str), encoding="utf-8")
        os.replace(tmp, self.dir / DONE)
        collectives.barrier(f"warmstart-done-{self.dir}")

    def load(self, engine) -> tuple[dict[str, Any], dict[str, bytes], dict]:
        """Put the saved params into ``engine`` (fresh optimiser state) and return
        (frozen trees on the engine's placement, files, summary). Raises WarmStartError when
        the folder is incomplete or was saved for another model."""
        info = self.summary()
        if info["model"] != str(engine.cfg.model.path):
            raise WarmStartError(f"warm start {self.dir} was saved for model {info['model']!r}, "
                                 f"this run uses {engine.cfg.model.path!r}")
        with Checkpointer(self.dir / "policy", max_to_keep=1) as ck:
            state, _, _ = ck.restore(0, target={"params": engine.state["params"]})
        engine.load_params(state["params"])
        frozen = {}
        for name in info["frozen"]:
            with Checkpointer(self.dir / "frozen" / name, max_to_keep=1) as ck:
                frozen[name] = ck.restore(0, target=engine.sampler_params)[0]
        files = {name: (self.dir / "files" / name).read_bytes() for name in info["files"]}
        return frozen, files, info["summary"]


def from_config(cfg) -> tuple[WarmStart | None, WarmStart | None]:
    """(save, load) warm starts named by ``config.warmstart`` (either may be None).

    With ``load_dir`` and ``wait_s`` > 0 this waits for the saving process first. Raises
    ValueError when both name the same folder."""
    w = cfg.get("warmstart")
    if w is None:
        return None, None
    save = WarmStart(w.save_dir) if w.get("save_dir") else None
    load = WarmStart(w.load_dir) if w.get("load_dir") else None
    if save and load and save.dir.resolve() == load.dir.resolve():
        raise ValueError("warmstart.save_dir and warmstart.load_dir name the same folder")
    if load is not None and float(w.get("wait_s", 0) or 0) > 0:
        load.wait(float(w.wait_s))
    return save, load
