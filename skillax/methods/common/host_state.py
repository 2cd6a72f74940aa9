"""Host state that only ever reflects a committed checkpoint (issue 23, item 1).

A method's host state -- the Skill1 library (SQLite), Skill-alpha's evidence stream, the
per-step logs -- changes during an RL step, before that step's checkpoint exists. A run that
dies in between (kill, OOM, an exception in step 0) must not leave a state that the next run
builds on. The rules every method loop follows:

* **Working copies live in** ``<workdir>/.staging/`` (:func:`staging_dir`, emptied at every
  start). The loop mutates only them.
* **Commit after the checkpoint**: right after ``engine.save(step, ...)`` succeeds the loop
  calls :func:`commit_bytes` with the same bytes the checkpoint holds, so ``<workdir>/<name>``
  (e.g. ``library.sqlite``, for people and tools that read the run folder) is always the
  state of a committed checkpoint. A kill between the two leaves the previous committed copy;
  the next run restores the checkpoint (the source of truth) and commits it again.
* **Restart without a checkpoint starts clean**: :func:`discard` removes what a dead run left
  (committed copies of a run that has no checkpoint any more, stale SQLite ``-wal`` / ``-shm``
  journals, caches derived from a frozen model that is being re-derived).

Pure host code (no jax), so it is testable without a model.
"""

from __future__ import annotations

import os
import pathlib
import shutil
from typing import Iterable

from skillax import process
from skillax.rl.durable import commit_bytes, commit_text, read_jsonl_prefix, truncate_jsonl  # noqa: F401 (re-exported)

STAGING = ".staging"
_SQLITE_SIDE = ("-wal", "-shm", "-journal")   # SQLite journals next to a database file


def staging_dir(workdir: str | os.PathLike) -> pathlib.Path:
    """``<workdir>/.staging/``, emptied: the working copies of this run (never read on start).
    Process i > 0 of a multi-process run (issue 21) gets ``<workdir>/.staging-p<i>/``: each
    process keeps its own working copy (the same bytes, ``skillax.collectives.agree``) even
    when the processes share the workdir."""
    i = process.index()
    d = pathlib.Path(workdir) / (STAGING if i == 0 else f"{STAGING}-p{i}")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def discard(workdir: str | os.PathLike, names: Iterable[str]) -> list[str]:
    """Remove ``<workdir>/<name>`` (file or folder, and SQLite journals next to it) for each
    name: what a dead run left that no checkpoint backs. Returns the names removed."""
    removed = []
    for name in names:
        p = pathlib.Path(workdir) / name
        hit = False
        for q in [p] + [pathlib.Path(str(p) + s) for s in _SQLITE_SIDE]:
            if q.is_dir() and not q.is_symlink():
                shutil.rmtree(q)
                hit = True
            elif q.exists() or q.is_symlink():
                q.unlink()
                hit = True
        if hit:
            removed.append(name)
    return removed
