"""Durable host files: atomic replacement and per-step JSONL logs cut back on resume.

* :func:`commit_bytes` / :func:`commit_text`: replace a file so that a kill at any moment
  leaves either the old or the new content, never a mix (temp file in the same folder, fsync,
  ``os.replace``, fsync of the folder). SQLite journals next to the destination are removed
  first so they can never be replayed onto the new file.
* :func:`truncate_jsonl`: a run resuming at step ``s`` keeps only the log records of steps
  ``< s`` (issue 23, item 3), so each step is logged exactly once.

Pure host code (no jax).
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile

_SQLITE_SIDE = ("-wal", "-shm", "-journal")


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


def read_jsonl_prefix(path: str | os.PathLike, start: int, key: str = "step") -> tuple[list[str], int]:
    """The lines of a per-step JSONL log that a run resuming at step ``start`` keeps: records
    with ``record[key] < start``, in file order. Records of steps >= ``start`` (logged after
    the checkpoint the run resumes from; they will be logged again) and a malformed line (a
    kill in the middle of a write) are dropped. Returns (kept lines, number dropped); a
    missing file is ([], 0)."""
    p = pathlib.Path(path)
    if not p.exists():
        return [], 0
    kept, dropped = [], 0
    for line in p.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            ok = int(rec[key]) < int(start)
        except (ValueError, KeyError, TypeError):
            ok = False
        if ok:
            kept.append(line)
        else:
            dropped += 1
    return kept, dropped


def truncate_jsonl(path: str | os.PathLike, start: int, key: str = "step") -> int:
    """Rewrite ``path`` (atomically, :func:`commit_text`) to the records of steps < ``start``
    (:func:`read_jsonl_prefix`): a resumed run at step ``start`` then logs each step once,
    and a run without a checkpoint (``start = 0``) starts an empty log. Returns the number of
    records dropped (0: file untouched)."""
    kept, dropped = read_jsonl_prefix(path, start, key)
    if dropped:
        commit_text(path, "".join(line + "\n" for line in kept))
    return dropped
