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
}


def make_hf_model(variant: str, seed: int = 0, vocab_size: int = 512, layers: int = 3):
    import transformers

    arch, kw = VARIANTS[variant]
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab_size, intermediate_size=96, num_hidden_layers=layers,
                  max_position_embeddings=512, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2,
                  pad_token_id=0)
    if arch == "qwen3":
        cfg = transformers.Qwen3Config(**common, **kw)
        model = transformers.Qwen3ForCausalLM(cfg)
    else:
        cfg = transformers.LlamaConfig(**common, **kw)
        model = transformers.LlamaForCausalLM(cfg)
    # Non-unit norm weights so a wrong norm placement cannot hide.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
    return model.float().eval()


def save_hf_model(variant: str, folder: pathlib.Path, **kw) -> pathlib.Path:
    model = make_hf_model(variant, **kw)
    model.save_pretrained(str(folder), safe_serialization=True)
    return folder
