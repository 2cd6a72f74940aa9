"""The OpenAI-compatible worker of a config's endpoint section ``<role>.openai``
(``config_defaults.openai_endpoint``: the one spelling of endpoints across methods)."""

from __future__ import annotations


def openai_worker(section, role: str):
    """An ``OpenAICompatWorker`` from ``section`` = ``cfg.<role>.openai`` (model, base_url,
    api_key_env, max_concurrency, max_retries, timeout_s, cache_path). ``role``: e.g.
    ``"executor"``, named in the error. Raises ValueError when ``model`` is empty."""
    from skillax.agents.workers.openai_compat import OpenAICompatConfig, OpenAICompatWorker

    s = section
    if not str(s.get("model", "") or ""):
        raise ValueError(f"{role}.kind='openai' needs {role}.openai.model (and {role}.openai.base_url for a "
                         "vLLM / SGLang / skillax serve endpoint)")
    return OpenAICompatWorker(OpenAICompatConfig(
        model=str(s.model), base_url=str(s.get("base_url", "") or "") or None,
        api_key_env=str(s.get("api_key_env", "OPENAI_API_KEY")), max_concurrency=int(s.get("max_concurrency", 8)),
        max_retries=int(s.get("max_retries", 5)), timeout_s=float(s.get("timeout_s", 60.0)),
        cache_path=str(s.get("cache_path", "") or "") or None))
