"""A :class:`~skillax.agents.workers.base.Worker` over any OpenAI-compatible chat endpoint.

Works with the OpenAI API, vLLM (``vllm serve MODEL`` -> ``http://HOST:8000/v1``) and SGLang
(``python -m sglang.launch_server`` -> ``http://HOST:30000/v1``) through the official
``openai`` package (``OpenAI(base_url=..., max_retries=0)``; retries are ours so they can be
counted). Per request:

1. Cache lookup (only when the request is deterministic: ``temperature == 0`` or a ``seed``
   is configured -- see :mod:`skillax.agents.workers.cache`). A hit sends nothing.
2. Up to ``1 + max_retries`` attempts. Retried: HTTP 408/409/429/5xx, timeouts, connection
   errors and malformed responses (invalid JSON, no choices). Not retried: other 4xx (bad
   request, authentication, unknown model) -- they cannot succeed by waiting.
3. Between attempts: exponential backoff with "full jitter" (AWS Architecture Blog,
   "Exponential Backoff and Jitter", 2015): ``sleep = U(0, min(cap, base * 2**attempt))``;
   a server ``Retry-After`` / ``retry-after-ms`` header raises the sleep to at least that
   value (capped at ``backoff_cap_s``).
4. After the last attempt: a :class:`Completion` with ``error`` set (counted in
   ``usage.failures``). Nothing escapes :meth:`OpenAICompatWorker.chat` as an exception.

Secrets: the API key is read only from the environment variable named by ``api_key_env``
(default ``OPENAI_API_KEY``) when the worker is built and handed to the ``openai`` client
only (it is not an attribute of the worker and not in its repr); it is never logged, and
every error string is scrubbed of it before it is returned or logged. Local servers without authentication need no key (the placeholder ``"EMPTY"``, the
vLLM convention, is sent).
"""
from __future__ import annotations

import dataclasses
import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from skillax.agents.workers.base import (Completion, Usage, error_completion, truncate_at_stop,
                                         validate_chat_args)
from skillax.agents.workers.cache import CompletionCache, cache_key, is_cacheable

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))


@dataclasses.dataclass(frozen=True)
class OpenAICompatConfig:
    """Settings of :class:`OpenAICompatWorker` (no secrets here: the key lives in the env).

    Attributes:
      model: model name sent in each request (e.g. ``"gpt-4o"``, or the name vLLM serves).
      base_url: endpoint root including ``/v1``; None = the OpenAI API.
      api_key_env: name of the environment variable holding the key.
      max_concurrency: requests in flight at once (thread pool size).
      max_retries: extra attempts after the first (0 = single attempt).
      timeout_s: per-attempt request timeout in seconds.
      backoff_base_s, backoff_cap_s: full-jitter backoff parameters in seconds.
      seed: sent with every request when set; makes requests cacheable at any temperature.
      top_p: nucleus sampling parameter sent when set.
      cache_path: sqlite file for the completion cache; None disables caching.
      max_tokens_field: ``"max_tokens"`` (vLLM, SGLang, older OpenAI models) or
        ``"max_completion_tokens"`` (newer OpenAI reasoning models).
      extra_body: extra JSON fields merged into each request (e.g. vLLM's
        ``{"chat_template_kwargs": {"enable_thinking": False}}``); part of the cache key.
    """

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 8
    max_retries: int = 5
    timeout_s: float = 60.0
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    seed: int | None = None
    top_p: float | None = None
    cache_path: str | None = None
    max_tokens_field: str = "max_tokens"
    extra_body: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a non-empty string")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.backoff_base_s < 0 or self.backoff_cap_s < 0:
            raise ValueError("backoff times must be >= 0")
        if self.max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise ValueError(f"max_tokens_field must be 'max_tokens' or 'max_completion_tokens', "
                             f"got {self.max_tokens_field!r}")


class _Retryable(Exception):
    """Internal: an attempt failed in a way worth retrying."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after_seconds(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (delta-seconds form); None if absent
    or unparsable (HTTP-date values are ignored)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue
    return None


class OpenAICompatWorker:
    """Batched chat client for OpenAI-compatible servers (see module docstring).

    Args:
      config: :class:`OpenAICompatConfig`.
      **overrides: convenience: fields of the config given directly, e.g.
        ``OpenAICompatWorker(model="m", base_url=url, max_retries=2)``.

    Raises:
      ValueError: invalid config.
    """

    def __init__(self, config: OpenAICompatConfig | None = None, **overrides: Any) -> None:
        import openai  # deferred: only users of remote workers pay the import

        if config is None:
            config = OpenAICompatConfig(**overrides)
        elif overrides:
            config = dataclasses.replace(config, **overrides)
        self.config = config
        self.usage = Usage()
        self._openai = openai
        key = os.environ.get(config.api_key_env) or "EMPTY"
        # The key is captured only inside these closures (never an attribute of self).
        self._scrub = _make_scrubber(key)
        self._client = openai.OpenAI(api_key=key, base_url=config.base_url,
                                     timeout=config.timeout_s, max_retries=0)
        del key
        self._cache = CompletionCache(config.cache_path) if config.cache_path else None
        self._rng = random.Random()
        self._rng_lock = threading.Lock()

    def __repr__(self) -> str:
        c = self.config
        return (f"OpenAICompatWorker(model={c.model!r}, base_url={c.base_url!r}, "
                f"api_key_env={c.api_key_env!r}, cache={c.cache_path!r})")

    # ------------------------------------------------------------------ public API

    def chat(self, batch: Sequence[Sequence[dict]], *, temperature: float, max_tokens: int,
             stop: Sequence[str] | None = None) -> list[Completion]:
        """Answer every conversation of ``batch`` (concurrently, order preserved).

        Args:
          batch: N conversations, each a list of ``{"role", "content"}`` messages.
          temperature: sampling temperature (>= 0).
          max_tokens: generation cap per conversation, in tokens of the served model.
          stop: optional stop strings (excluded from the returned text).

        Returns:
          N :class:`Completion`; failed requests have ``error`` set (never raises for a
          request failure).

        Raises:
          ValueError: malformed arguments (see ``validate_chat_args``).
        """
        stops = validate_chat_args(batch, temperature, max_tokens, stop)
        convs = [[{"role": m["role"], "content": m["content"]} for m in conv] for conv in batch]
        if not convs:
            return []
        if len(convs) == 1 or self.config.max_concurrency == 1:
            return [self._one(c, temperature, int(max_tokens), stops) for c in convs]
        with ThreadPoolExecutor(max_workers=min(self.config.max_concurrency, len(convs))) as pool:
            return list(pool.map(lambda c: self._one(c, temperature, int(max_tokens), stops), convs))

    def close(self) -> None:
        """Close the HTTP client and the cache."""
        self._client.close()
        if self._cache is not None:
            self._cache.close()

    # ------------------------------------------------------------------ internals

    def _params(self, temperature: float, max_tokens: int, stops: list[str]) -> dict[str, Any]:
        c = self.config
        p: dict[str, Any] = {"temperature": temperature, c.max_tokens_field: max_tokens}
        if stops:
            p["stop"] = stops
        if c.seed is not None:
            p["seed"] = c.seed
        if c.top_p is not None:
            p["top_p"] = c.top_p
        if c.extra_body:
            p["extra_body"] = c.extra_body
        return p

    def _one(self, messages: list[dict], temperature: float, max_tokens: int,
             stops: list[str]) -> Completion:
        params = self._params(temperature, max_tokens, stops)
        key = None
        if self._cache is not None and is_cacheable(temperature, self.config.seed):
            key = cache_key(self.config.model, messages, params)
            hit = self._cache.get(key)
            if hit is not None:
                self.usage.add(calls=1, cache_hits=1)
                return hit
        last_error = "no attempt made"
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                self.usage.add(retries=1)
            self.usage.add(requests=1)
            try:
                out = self._attempt(messages, params, stops)
            except _Retryable as e:
                last_error = str(e)
                if attempt < self.config.max_retries:
                    delay = self._backoff(attempt, e.retry_after)
                    log.warning("worker request failed (%s); retry %d/%d in %.2fs", last_error,
                                attempt + 1, self.config.max_retries, delay)
                    time.sleep(delay)
                continue
            except Exception as e:  # non-retryable (4xx other than 408/409/429, bugs)
                last_error = self._describe(e)
                log.warning("worker request failed, not retried: %s", last_error)
                break
            self.usage.add(calls=1, prompt_tokens=out.prompt_tokens,
                           completion_tokens=out.completion_tokens)
            if key is not None:
                self._cache.put(key, out)
            return out
        self.usage.add(calls=1, failures=1)
        return error_completion(last_error)

    def _attempt(self, messages: list[dict], params: dict[str, Any], stops: list[str]) -> Completion:
        """One HTTP request. Raises _Retryable for transient failures, other exceptions
        (already scrubbed in their message by :meth:`_describe`) for permanent ones."""
        oa = self._openai
        kwargs = dict(params)
        extra_body = kwargs.pop("extra_body", None)
        try:
            resp = self._client.chat.completions.create(
                model=self.config.model, messages=messages, extra_body=extra_body, **kwargs)
        except oa.APIStatusError as e:
            if e.status_code in RETRY_STATUS:
                raise _Retryable(self._describe(e), _retry_after_seconds(e.response.headers)) from None
            raise
        except (oa.APITimeoutError, oa.APIConnectionError) as e:
            raise _Retryable(self._describe(e)) from None
        except ValueError as e:  # JSON decoding of a malformed body
            raise _Retryable(f"malformed response: {self._describe(e)}") from None
        try:
            choice = resp.choices[0]
            text = choice.message.content or ""
            finish = choice.finish_reason or "stop"
        except (AttributeError, IndexError, TypeError) as e:
            raise _Retryable(f"malformed response: {type(e).__name__}") from None
        # Some servers return the stop string; OpenAI semantics exclude it.
        text, _ = truncate_at_stop(text, stops)
        usage = getattr(resp, "usage", None)
        return Completion(text=text, finish_reason=finish,
                          prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                          completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0))

    def _describe(self, e: BaseException) -> str:
        status = getattr(e, "status_code", None)
        head = f"{type(e).__name__}" + (f" (HTTP {status})" if status is not None else "")
        return self._scrub(f"{head}: {e}"[:500])

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        c = self.config
        with self._rng_lock:
            delay = self._rng.uniform(0.0, min(c.backoff_cap_s, c.backoff_base_s * 2 ** attempt))
        if retry_after is not None:
            delay = max(delay, min(retry_after, c.backoff_cap_s))
        return delay


def _make_scrubber(secret: str):
    """Return ``scrub(text) -> text`` replacing ``secret`` (and its obvious variants) with
    ``***``. Placeholder keys shorter than 8 characters are not secrets and are left alone."""
    variants = [] if len(secret) < 8 else [secret, secret[:-1], secret[1:]]

    def scrub(text: str) -> str:
        for v in variants:
            text = text.replace(v, "***")
        return text

    return scrub
