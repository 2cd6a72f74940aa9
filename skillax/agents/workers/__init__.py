"""Frozen worker models behind one batched chat API (:class:`Worker`).

* :class:`OpenAICompatWorker` -- OpenAI / vLLM / SGLang chat-completions endpoints.
* :class:`LocalWorker` -- a frozen local policy through the sampler's ``generate_fn``.

Imports are lazy so that ``from skillax.agents.workers import Completion`` stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

from skillax.agents.workers.base import Completion, Usage, Worker, error_completion

_LAZY = {
    "OpenAICompatWorker": "skillax.agents.workers.openai_compat",
    "OpenAICompatConfig": "skillax.agents.workers.openai_compat",
    "LocalWorker": "skillax.agents.workers.local",
    "CompletionCache": "skillax.agents.workers.cache",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Completion", "Usage", "Worker", "error_completion", *_LAZY]
