"""Random tiny transformers checkpoints written with ``save_pretrained`` (the parity fixture)."""

from __future__ import annotations

import pathlib

import torch

VARIANTS = {
    # name: (arch, kwargs)
    "qwen3_tied_gqa42": ("qwen3", dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                        head_dim=24, tie_word_embeddings=True, rope_theta=5000.0)),
    "qwen3_untied_gqa62": ("qwen3", dict(hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
                                          head_dim=16, tie_word_embeddings=False, rope_theta=1e6)),
    "llama_tied": ("llama", dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                 tie_word_embeddings=True, rope_theta=1e5)),
    # Qwen2 / Qwen2.5: q/k/v biases (made non-zero below), no q/k-norm, head_dim = hidden / heads
    "qwen2_tied_gqa42": ("qwen2", dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                        tie_word_embeddings=True, rope_theta=1e6)),
    "qwen2_untied_gqa71": ("qwen2", dict(hidden_size=56, num_attention_heads=7, num_key_value_heads=1,
                                          tie_word_embeddings=False, rope_theta=1e6)),
}
_CLASSES = {"qwen3": ("Qwen3Config", "Qwen3ForCausalLM"), "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
            "llama": ("LlamaConfig", "LlamaForCausalLM")}


def make_hf_model(variant: str, seed: int = 0, vocab_size: int = 512, layers: int = 3,
                  init_std: float | None = None):
    """Random fp32 transformers model of ``VARIANTS[variant]`` (``init_std``: the weights'
    initializer_range; larger = peaked logits, a clear greedy argmax)."""
    import transformers

    arch, kw = VARIANTS[variant]
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab_size, intermediate_size=96, num_hidden_layers=layers,
                  max_position_embeddings=8192, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2,
                  pad_token_id=0)
    if init_std is not None:
        common["initializer_range"] = init_std
    config_cls, model_cls = (getattr(transformers, n) for n in _CLASSES[arch])
    model = model_cls(config_cls(**common, **kw))
    # Non-unit norm weights and non-zero biases so a wrong placement cannot hide.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn_like(p))
    return model.float().eval()


def save_hf_model(variant: str, folder: pathlib.Path, **kw) -> pathlib.Path:
    model = make_hf_model(variant, **kw)
    model.save_pretrained(str(folder), safe_serialization=True)
    return folder


def save_tiny_chat_model(folder: pathlib.Path) -> pathlib.Path:
    """A 2-layer untied Qwen2 (GQA 7:1, peaked logits) + the tiny test tokenizer saved in
    ``folder``: a servable / exportable chat policy in milliseconds (serve and export tests)."""
    from tests.engine.conftest import VOCAB, make_tokenizer

    make_hf_model("qwen2_untied_gqa71", layers=2, vocab_size=VOCAB, init_std=0.25).save_pretrained(str(folder))
    make_tokenizer().save_pretrained(str(folder))
    return folder
