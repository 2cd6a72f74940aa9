"""Engine fixtures: a real byte-level BPE tokenizer trained in-process, tiny random HF
checkpoints (transformers ``Qwen3ForCausalLM`` / ``LlamaForCausalLM``, ``save_pretrained``)
loaded through skillax's HF loader, and one shared fp32 sampler whose compiled programs
are reused across the engine tests (compiling dominates their run time on CPU)."""

from __future__ import annotations

import pathlib

import jax.numpy as jnp
import pytest

VOCAB = 512
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

_CORPUS = [
    "<think>The key is in the drawer.</think><action>open drawer 1</action>",
    "<think>I should go north.</think><action>go north</action>",
    "<tool_call>{\"name\": \"insert_skill\", \"arguments\": {\"name\": \"find-key\"}}</tool_call>",
    "<rank>3,1,2</rank> the quick brown fox jumps over the lazy dog 0123456789",
    "You are in the middle of a room. Looking around you, you see a cabinet 1, a drawer 2.",
    "Your task is to: put a clean apple in the fridge. > take apple 1 from countertop 2",
    "Nothing happens. You open the fridge 1. The fridge 1 is open. In it, you see a tomato.",
]


def make_tokenizer():
    """ByteLevel BPE (GPT-2 alphabet, like Qwen3 / SmolLM2) with <= VOCAB ids and ChatML."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - 8, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS * 20, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    assert len(fast) <= VOCAB
    return fast


def make_hf_model(arch: str, seed: int = 0, layers: int = 2):
    """Random fp32 transformers model; init std 0.25 so logits are peaked (clear argmax)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                  rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                  initializer_range=0.25)
    if arch == "qwen3":
        model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(
            head_dim=16, tie_word_embeddings=False, rope_theta=10000.0, **common))
    else:  # SmolLM2 architecture: Llama, tied embeddings, rope theta 1e5
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            tie_word_embeddings=True, rope_theta=100000.0, **common))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
    return model.float().eval()


def load_ours(model, folder: pathlib.Path):
    from skillax.models.hf_io import load_hf_checkpoint

    model.save_pretrained(str(folder), safe_serialization=True)
    return load_hf_checkpoint(folder, dtype=jnp.float32)


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="session")
def qwen3(tmp_path_factory):
    """(hf_model, params, cfg) of a tiny random Qwen3, fp32."""
    model = make_hf_model("qwen3")
    params, cfg = load_ours(model, tmp_path_factory.mktemp("qwen3"))
    return model, params, cfg


@pytest.fixture(scope="session")
def engine_buckets():
    from skillax.engine import Buckets

    return Buckets(batch=(4, 8), prompt=(16, 32), new_tokens=(16, 32), cache=(64, 128, 256))


@pytest.fixture(scope="session")
def sampler(qwen3, tokenizer, engine_buckets):
    """Shared fp32 sampler over the tiny Qwen3 (programs compiled once per bucket)."""
    from skillax.engine import Sampler

    _, _, cfg = qwen3
    return Sampler(cfg, tokenizer, max_len=256, dtype=jnp.float32, buckets=engine_buckets)
