"""Tokenizers and chat rendering (host side; no jax).

Public API:
  load_qwen3_tokenizer(cache_dir=None)      Qwen3 tokenizer built offline from qwen.tiktoken, cached
  load_tokenizer(path=None, ...)            a checkpoint folder's own tokenizer, Qwen3, or a GGUF's
  render / encode_chat / render_with_masks  chat templates and assistant-token masks
"""
from skillax.tokenizers.chat import (
    QWEN3_CHAT_TEMPLATE,
    assistant_spans,
    encode_chat,
    render,
    render_with_masks,
)
from skillax.tokenizers.loader import load_tokenizer
from skillax.tokenizers.qwen3 import QWEN3_ADDED_TOKENS, load_qwen3_tokenizer

__all__ = [
    "QWEN3_ADDED_TOKENS",
    "QWEN3_CHAT_TEMPLATE",
    "assistant_spans",
    "encode_chat",
    "load_qwen3_tokenizer",
    "load_tokenizer",
    "render",
    "render_with_masks",
]
