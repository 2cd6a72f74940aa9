"""Skill-alpha's shared warm start (the learning campaign's contract, issue 18; the folder
format is :mod:`skillax.methods.common.warmstart`).

What the arms of an experiment share, saved once right after the SFT stages:

* the editor's parameters after its edit SFT (the ``policy`` tree);
* the frozen worker after its play SFT (``frozen/worker``), so every arm's rollback rewards
  and evaluations come from the same worker;
* ``evidence_stream.json`` (the evidence chunks and the anchored-query pool), so every arm
  edits the same stream -- its worker trajectories were sampled once;
* a summary: the play SFT, setting and edit SFT metrics of the saving run, and its workdir;
  its owner record (``methods.common.warmstart.owner``): a re-run of that run reloads its own
  warm start instead of redoing the SFT (the other arms may have loaded it already).

``load`` puts the editor into the engine (fresh optimiser state), writes the worker into the
run's own ``<workdir>/frozen/worker`` (the layout of ``PolicyEngine.persistent_frozen``, so a
resumed arm reloads exactly this worker) and the stream into ``<workdir>/evidence_stream.json``
(which ``setting.build_setting`` then reads instead of playing evidence games).

Several processes (issue 21): ``load`` works -- every process restores the worker onto the
global mesh and saves it (orbax's multi-process save), process 0 writes the stream file, and
each samples with its own replica of the worker (``PolicyEngine.sampler_replica``); ``save``
does not (its frozen worker: ``loop.check_warm_start`` refuses it before any SFT).
"""
from __future__ import annotations

import pathlib
import shutil

from skillax.rl.durable import commit_bytes
from skillax.rl.checkpoint import Checkpointer

WORKER = "worker"
STREAM_FILE = "evidence_stream.json"


def persist_frozen(engine, name: str, params) -> None:
    """Save ``params`` as the run's frozen copy ``name`` (``<workdir>/frozen/<name>/``, orbax
    step 0, as ``PolicyEngine.persistent_frozen`` writes it), replacing an older one.
    Several processes: a collective (process 0 clears the folder, every process saves its shards)."""
    from skillax import collectives, process

    folder = pathlib.Path(engine.workdir) / "frozen" / name
    if process.is_writer():
        shutil.rmtree(folder, ignore_errors=True)
    collectives.barrier(f"frozen-{name}-cleared")
    with Checkpointer(folder, max_to_keep=1) as ck:
        ck.save(0, params, {"name": name})


def save(ws, engine, worker_params, workdir, summary: dict, owner: dict | None = None) -> None:
    """Write the warm start (module docstring); ``worker_params`` None = no local worker
    (``worker.kind = "openai"``); ``owner``: ``methods.common.warmstart.owner`` of the saving
    run. Raises FileNotFoundError when the run has no evidence stream file (build_setting
    always writes one when given a workdir)."""
    stream = pathlib.Path(workdir) / STREAM_FILE
    ws.save(engine, frozen={WORKER: worker_params} if worker_params is not None else {},
            files={STREAM_FILE: stream.read_bytes()},
            summary={**summary, "workdir": str(pathlib.Path(workdir).resolve())}, owner=owner)


def load(ws, engine, workdir, need_worker: bool = True) -> tuple[object, dict]:
    """Load the warm start into ``engine`` and the run folder; returns (worker params or
    None, the saving run's summary; the worker as the sampler reads it: this process's replica
    with several processes). Raises WarmStartError (incomplete / other model) or KeyError when
    the folder lacks the stream or (``need_worker``) the worker."""
    from skillax import collectives, process

    frozen, files, summary = ws.load(engine)
    if STREAM_FILE not in files or (need_worker and WORKER not in frozen):
        raise KeyError(f"warm start {ws.dir} has no frozen '{WORKER}' or no {STREAM_FILE} "
                       f"(frozen: {sorted(frozen)}, files: {sorted(files)}): not a Skill-alpha warm start")
    worker = frozen.get(WORKER) if need_worker else None
    if worker is not None:
        persist_frozen(engine, WORKER, worker)
        worker = engine.sampler_replica(worker)
    if process.is_writer():
        commit_bytes(pathlib.Path(workdir) / STREAM_FILE, files[STREAM_FILE])
    collectives.barrier("skill-alpha-warm-stream-written")     # every process then reads it
    return worker, summary
