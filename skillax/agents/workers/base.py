"""The worker protocol: a frozen chat model that answers a *batch* of conversations at once.

A method (Skill-α's anchored-query replays, SkillOS's executor, a judge) sends every worker
call of one unit of work in a single :meth:`Worker.chat` call, so a local sampler can batch
them on the accelerator and a remote client can run them concurrently.

Contract (shared by :class:`~skillax.agents.workers.openai_compat.OpenAICompatWorker` and
:class:`~skillax.agents.workers.local.LocalWorker`):

* ``chat(batch, *, temperature, max_tokens, stop=None) -> list[Completion]`` with
  ``len(result) == len(batch)`` and ``result[i]`` answering ``batch[i]``.
* A conversation is a list of OpenAI-style messages ``{"role": str, "content": str}`` with
  ``role`` in ``system | user | assistant | tool``.
* Per-request failures never raise: they come back as a :class:`Completion` with ``error``
  set (``text == ""``, ``finish_reason == "error"``) and are counted in :class:`Usage`.
  Malformed *input* (not a list of messages, negative ``max_tokens``) raises ``ValueError``
  before anything is sent.
* ``finish_reason`` follows the OpenAI vocabulary: ``"stop"`` (end of turn or a stop string;
  the stop string itself is not part of ``text``), ``"length"`` (``max_tokens`` reached),
  ``"error"``; other server values are passed through.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Protocol, Sequence, runtime_checkable

ROLES = ("system", "user", "assistant", "tool")

Message = dict  # {"role": str, "content": str}


@dataclasses.dataclass(frozen=True)
class Completion:
    """One worker answer.

    Attributes:
      text: the generated text ("" on error).
      finish_reason: "stop" | "length" | "error" (or a server-specific value).
      prompt_tokens: tokens in the rendered prompt (0 when unknown or on error).
      completion_tokens: generated tokens (0 when unknown or on error).
      error: None on success; else a short, secret-free description of why the request failed.
      cached: True when the answer came from the on-disk cache (no request was sent).
    """

    text: str
    finish_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def error_completion(message: str) -> Completion:
    """A failed :class:`Completion` carrying ``message`` (which must already be scrubbed)."""
    return Completion(text="", finish_reason="error", error=message)


@dataclasses.dataclass
class Usage:
    """Usage counters of one worker, updated under a lock (workers run requests in threads).

    Attributes:
      calls: completions returned (one per conversation, cached or not, failed or not).
      requests: HTTP requests / generation batches actually sent (every attempt counts, so
        ``requests = first attempts + retries``).
      cache_hits: completions served from the cache (no request sent).
      retries: attempts after the first for the same conversation.
      failures: completions returned with ``error`` set.
      prompt_tokens, completion_tokens: summed over successful, non-cached completions, as
        reported by the server (remote) or counted from token ids (local).
    """

    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, **deltas: int) -> None:
        """Atomically add ``deltas`` (field name -> increment). Raises AttributeError on an
        unknown field name."""
        with self._lock:
            for k, v in deltas.items():
                if k.startswith("_") or k not in self.__dataclass_fields__:
                    raise AttributeError(f"Usage has no counter {k!r}")
                setattr(self, k, getattr(self, k) + int(v))

    def as_dict(self) -> dict[str, int]:
        """Plain dict of the counters (for metrics JSONL)."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def reset(self) -> None:
        with self._lock:
            for f in dataclasses.fields(self):
                setattr(self, f.name, 0)


@runtime_checkable
class Worker(Protocol):
    """A frozen chat model answering batches of conversations (see module docstring)."""

    usage: Usage

    def chat(self, batch: Sequence[Sequence[Message]], *, temperature: float,
             max_tokens: int, stop: Sequence[str] | None = None) -> list[Completion]:
        ...


def validate_chat_args(batch: Sequence[Sequence[Message]], temperature: float,
                       max_tokens: int, stop: Sequence[str] | None) -> list[str]:
    """Check the arguments of :meth:`Worker.chat`; return ``stop`` as a list.

    Raises:
      ValueError: ``batch`` is not a sequence of non-empty message lists, a message lacks a
        known ``role`` or a string ``content``, ``temperature < 0``, ``max_tokens < 1``, or
        ``stop`` holds a non-string / empty string.
    """
    if isinstance(batch, (str, bytes)) or not isinstance(batch, Sequence):
        raise ValueError(f"batch must be a list of conversations, got {type(batch).__name__}")
    for i, conv in enumerate(batch):
        if isinstance(conv, (str, bytes, dict)) or not isinstance(conv, Sequence) or not conv:
            raise ValueError(f"batch[{i}] must be a non-empty list of messages")
        for j, m in enumerate(conv):
            if not isinstance(m, dict) or m.get("role") not in ROLES:
                raise ValueError(f"batch[{i}][{j}] must be a dict with role in {ROLES}, got {m!r:.80}")
            if not isinstance(m.get("content"), str):
                raise ValueError(f"batch[{i}][{j}]['content'] must be a str")
    if not temperature >= 0.0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if int(max_tokens) != max_tokens or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens}")
    stops = [] if stop is None else ([stop] if isinstance(stop, str) else list(stop))
    for s in stops:
        if not isinstance(s, str) or not s:
            raise ValueError(f"stop strings must be non-empty str, got {s!r}")
    return stops


def truncate_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the earliest occurrence of any stop string (OpenAI semantics: the
    stop string is not returned). Returns (text, hit)."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)
