"""Deterministic on-disk cache of worker completions (sqlite3, one table, thread-safe).

Key: ``sha256`` of the canonical JSON (sorted keys, no whitespace, UTF-8) of
``{"model", "messages", "params"}`` where ``params`` are the sampling parameters that change
the answer (temperature, max_tokens, stop, seed, top_p, extra request body). The endpoint URL
and the API key are *not* part of the key: the same model name behind another server shares
entries (documented choice: move a cache file together with the model it was made with).

Only answers that are reproducible are worth caching; the caller decides with
:func:`is_cacheable` (temperature 0, or an explicit seed). Only successful completions are
stored, so a failure is retried on the next run.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from typing import Any

from skillax.agents.workers.base import Completion

_SCHEMA = "CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def is_cacheable(temperature: float, seed: int | None) -> bool:
    """True when the request is deterministic enough to cache: greedy decoding
    (``temperature == 0``) or a fixed ``seed`` (servers honour it best-effort)."""
    return temperature == 0.0 or seed is not None


def cache_key(model: str, messages: list[dict], params: dict[str, Any]) -> str:
    """Hex sha256 over the canonical JSON of (model, messages, params).

    Raises TypeError when ``params`` holds something JSON cannot encode."""
    blob = json.dumps({"model": model, "messages": messages, "params": params},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CompletionCache:
    """sqlite3-backed map ``key -> Completion`` shared by the threads of one worker.

    Args:
      path: database file; parent directories are created. ``":memory:"`` for a private,
        process-local cache.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        path = os.fspath(path)
        if path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL" if path != ":memory:" else "PRAGMA journal_mode=MEMORY")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> Completion | None:
        """The cached completion (with ``cached=True``) or None."""
        with self._lock:
            row = self._db.execute("SELECT value FROM completions WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        d = json.loads(row[0])
        return Completion(text=d["text"], finish_reason=d["finish_reason"],
                          prompt_tokens=d.get("prompt_tokens", 0),
                          completion_tokens=d.get("completion_tokens", 0), cached=True)

    def put(self, key: str, completion: Completion) -> None:
        """Store a successful completion. Raises ValueError for a failed one."""
        if completion.error is not None:
            raise ValueError("failed completions are never cached")
        value = json.dumps({"text": completion.text, "finish_reason": completion.finish_reason,
                            "prompt_tokens": completion.prompt_tokens,
                            "completion_tokens": completion.completion_tokens})
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO completions (key, value) VALUES (?, ?)",
                             (key, value))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        return f"CompletionCache(path={self.path!r})"
