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
import tempfile
from typing import Iterable

STAGING = ".staging"
_SQLITE_SIDE = ("-wal", "-shm", "-journal")


def staging_dir(workdir: str | os.PathLike) -> pathlib.Path:
    """``<workdir>/.staging/``, emptied: the working copies of this run (never read on start)."""
    d = pathlib.Path(workdir) / STAGING
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def _fsync_dir(path: pathlib.Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit_bytes(dest: str | os.PathLike, data: bytes) -> pathlib.Path:
    """Atomically replace ``dest`` with ``data`` (same-folder temp file, fsync, rename, fsync
    of the folder); an SQLite journal left next to ``dest`` is removed first, so it can never
    be replayed onto the new file. Returns ``dest``."""
    dest = pathlib.Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    for side in _SQLITE_SIDE:
        pathlib.Path(str(dest) + side).unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(bytes(data))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(dest.parent)
    return dest


def commit_text(dest: str | os.PathLike, text: str) -> pathlib.Path:
    """:func:`commit_bytes` of UTF-8 ``text``."""
    return commit_bytes(dest, text.encode("utf-8"))


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
