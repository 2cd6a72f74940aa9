"""Building blocks shared by ``configs/*.py`` (each config file stays a small ``get_config``)."""

from __future__ import annotations

import ml_collections


def model(path: str = "smollm2") -> ml_collections.ConfigDict:
    """Policy model settings.

    path: an HF checkpoint folder (Qwen3 / Llama safetensors), ``smollm2`` (the embedded
      SmolLM2-135M-Instruct GGUF), or ``random:<shape>`` (qwen3-0.6b | qwen3-1.7b | qwen3-8b).
    dtype: compute dtype ("auto" = bfloat16 on accelerators, float32 on CPU... see resolve).
    param_dtype: storage dtype of the parameters held by the trainer/sampler.
    max_len: KV-cache length (prompt + generated tokens) of the sampler.
    """
    c = ml_collections.ConfigDict()
    c.path = path
    c.dtype = "auto"
    c.param_dtype = "float32"
    c.max_len = 2048
    return c


def mesh() -> ml_collections.ConfigDict:
    """(data, fsdp, tensor) sizes; -1 fills with the remaining devices."""
    c = ml_collections.ConfigDict()
    c.shape = (1, -1, 1)
    return c


def base(mode: str) -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.mode = mode
    c.seed = 0
    c.distributed = False
    c.model = model()
    c.mesh = mesh()
    return c
