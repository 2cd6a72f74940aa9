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

The same folder also checkpoints a run's own SFT stages (issue 23, item 5): without
``save_dir`` a run saves its SFT result in ``<workdir>/warmstart/`` (:func:`plan`;
``warmstart.in_workdir``, default True), so a run that dies in RL step 0 (or during the
evaluation of a ``steps = 0`` arm) and is started again on the same workdir loads it instead of
repeating the SFT. A saved warm start records its owner (the run's workdir and the config keys
that shape the SFT result, :func:`sft_fingerprint`); only the same run with the same such keys
reloads it. Precedence: a checkpoint in the workdir (resume) > ``load_dir`` > a warm start
this run saved (``save_dir`` or ``<workdir>/warmstart/``) > running the SFT stages.

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
IN_WORKDIR = "warmstart"       # <workdir>/warmstart/: a run's own SFT result (module docstring)


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

    def owned_by(self, cfg, workdir) -> bool:
        """Whether this is a complete warm start saved by the run in ``workdir`` with the same
        :func:`sft_fingerprint` as ``cfg`` (a re-run of that run may load it instead of
        repeating its SFT stages)."""
        if not self.exists():
            return False
        owner = self.summary().get("owner") or {}
        return owner.get("workdir") == str(pathlib.Path(workdir).resolve()) and \
            owner.get("config") == sft_fingerprint(cfg)

    def save(self, engine, *, frozen: Mapping[str, Any] | None = None, files: Mapping[str, bytes] | None = None,
             summary: Mapping[str, Any] | None = None, owner: Mapping[str, Any] | None = None) -> None:
        """Save the engine's current fp32 params, ``frozen`` sampler-dtype trees, ``files``
        and a JSON ``summary`` (the method's SFT metrics), replacing an older warm start.

        Several processes (issue 21): every process calls it (orbax's multi-process save of
        the params); process 0 alone clears the folder and writes the files and ``DONE.json``.
        ``frozen`` trees are per-process sampler replicas there: NotImplementedError.
        ``owner``: {"workdir", "config"} of the saving run (:func:`owner`; :meth:`owned_by`)."""
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
        done = {"model": str(engine.cfg.model.path), "think": answer_think(engine.cfg),
                "frozen": sorted(frozen or {}), "files": sorted(files or {}),
                "summary": dict(summary or {}), "owner": dict(owner or {}),
                "sampler_calls": int(getattr(engine, "sampler_calls", 0)), "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = self.dir / (DONE + ".tmp")
        tmp.write_text(json.dumps(done, indent=2, default=str), encoding="utf-8")
        os.replace(tmp, self.dir / DONE)
        collectives.barrier(f"warmstart-done-{self.dir}")

    def load(self, engine) -> tuple[dict[str, Any], dict[str, bytes], dict]:
        """Put the saved params and the policy samplers' call counter into ``engine`` (fresh
        optimiser state) and return
        (frozen trees on ``engine.frozen_target()``'s placement -- with several processes the
        global mesh, ``engine.sampler_replica`` makes them samplable --, files, summary).
        Raises WarmStartError when the folder is incomplete or was saved for another model
        or answer format (:func:`answer_think`)."""
        info = self.summary()
        if info["model"] != str(engine.cfg.model.path):
            raise WarmStartError(f"warm start {self.dir} was saved for model {info['model']!r}, "
                                 f"this run uses {engine.cfg.model.path!r}")
        saved_think, think = bool(info.get("think", True)), answer_think(engine.cfg)   # no key: saved before it
        if saved_think != think:
            raise WarmStartError(f"warm start {self.dir} was trained with play.think={saved_think} "
                                 f"(answer format), this run uses play.think={think}")
        with Checkpointer(self.dir / "policy", max_to_keep=1) as ck:
            state, _, _ = ck.restore(0, target={"params": engine.state["params"]})
        engine.load_params(state["params"])
        # where the policy samplers' random stream stood (sampling before RL, e.g. Skill-alpha's
        # evidence stream, advances it): a re-run of the saving run continues it exactly
        engine.sampler_calls = int(info.get("sampler_calls", 0))
        frozen = {}
        for name in info["frozen"]:
            with Checkpointer(self.dir / "frozen" / name, max_to_keep=1) as ck:
                frozen[name] = ck.restore(0, target=engine.frozen_target())[0]
        files = {name: (self.dir / "files" / name).read_bytes() for name in info["files"]}
        return frozen, files, info["summary"]


def answer_think(cfg) -> bool:
    """``play.think`` of ``cfg`` (``PlayConfig.think``'s default, True, where the config has no
    such key, as :func:`methods.common.play.play_config` reads it): whether the policy answers
    with a ``<think>`` block before its action. A warm start records it, and
    :meth:`WarmStart.load` refuses one trained with the other answer format (its SFT demos
    taught that format). Warm starts saved before the key existed were all trained with
    ``think=True``."""
    from skillax.agents.agent_loop import PlayConfig

    p = cfg.get("play")
    return bool(PlayConfig.think if p is None else p.get("think", PlayConfig.think))


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


def sft_fingerprint(cfg) -> dict:
    """The config keys (flattened ``a.b.c`` -> value) that shape a run's SFT result: every key
    except those a resume may change (``run_dir.MAY_CHANGE``: steps, eval, warm start, where it
    runs, ...), with the ``sft.*`` keys kept. Conservative: changing any RL key of a run that has
    no RL checkpoint yet also re-runs its SFT."""
    from skillax.methods.common import run_dir

    flat = run_dir.flatten(json.loads(cfg.to_json_best_effort()))
    return {k: v for k, v in sorted(flat.items())
            if k.startswith("sft.") or not run_dir.may_change(k, flat)}


def owner(cfg, workdir) -> dict:
    """The ``owner`` record :meth:`WarmStart.save` stores for the run in ``workdir``."""
    return {"workdir": str(pathlib.Path(workdir).resolve()), "config": sft_fingerprint(cfg)}


def in_workdir(cfg, workdir) -> WarmStart | None:
    """``<workdir>/warmstart/`` (None when ``warmstart.in_workdir`` is False)."""
    w = cfg.get("warmstart")
    if w is not None and not bool(w.get("in_workdir", True)):
        return None
    return WarmStart(pathlib.Path(workdir) / IN_WORKDIR)


def plan(cfg, workdir) -> tuple[WarmStart | None, WarmStart | None, str]:
    """Where a run without a checkpoint gets its post-SFT state (module docstring):
    (``load`` or None, ``save`` or None, ``source``).

    * ``load_dir`` set: (that, None, "load_dir") -- waits ``wait_s`` for it (:func:`from_config`);
    * a warm start this run saved (``save_dir``, else ``<workdir>/warmstart/``) whose owner is
      this workdir with the same :func:`sft_fingerprint`: (that, None, "own");
    * else (None, where to save after the SFT stages: ``save_dir``, else
      ``<workdir>/warmstart/`` or None when ``warmstart.in_workdir`` is False, "sft"). A
      ``<workdir>/warmstart/`` of another config is removed here (it is never loaded).

    Callers save ``<workdir>/warmstart/`` only when an SFT stage ran (:func:`worth_saving`);
    ``save_dir`` always (the arms of an experiment load it)."""
    save_ws, load_ws = from_config(cfg)
    if load_ws is not None:
        return load_ws, None, "load_dir"
    target = save_ws if save_ws is not None else in_workdir(cfg, workdir)
    if target is None:
        return None, None, "sft"
    if target.owned_by(cfg, workdir):
        return target, None, "own"
    if save_ws is None and target.dir.exists():
        shutil.rmtree(target.dir)
        print(f"removed {target.dir}: an SFT warm start of another config")
    return None, target, "sft"


def worth_saving(ws: WarmStart | None, cfg, sft_ran: bool) -> bool:
    """Whether to write ``ws`` (from :func:`plan`) after the SFT stages: always for
    ``save_dir``, for ``<workdir>/warmstart/`` only when an SFT stage ran (nothing to protect
    otherwise)."""
    if ws is None:
        return False
    w = cfg.get("warmstart") or {}
    if w.get("save_dir") and ws.dir.resolve() == pathlib.Path(w.get("save_dir")).resolve():
        return True
    return bool(sft_ran)
