"""Model configuration parsed from a Hugging Face ``config.json`` (Qwen3 dense and Llama).

Qwen3 dense and Llama-family checkpoints share one architecture here: pre-norm decoder,
RMSNorm, GQA attention with rotate-half RoPE, SwiGLU MLP. Qwen3 adds an RMSNorm over
``head_dim`` on queries and keys before RoPE (``qk_norm``); Llama does not.

Reference: ``transformers.models.qwen3.modeling_qwen3`` and
``transformers.models.llama.modeling_llama``.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Any

_QK_NORM_ARCHS = {"Qwen3ForCausalLM": True, "LlamaForCausalLM": False, "MistralForCausalLM": False}
_MODEL_TYPES = {"qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM"}


class ConfigError(ValueError):
    """A checkpoint config lacks a field we need or names an unsupported architecture."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Static shape/hyper-parameters of a decoder-only LM. Hashable (used as a jit static arg).

    Attributes:
      vocab_size: rows of the embedding table (V), including any padding rows.
      hidden_size: residual width D.
      intermediate_size: SwiGLU width F.
      num_layers: L.
      num_heads: query heads H.
      num_kv_heads: key/value heads KV (H % KV == 0).
      head_dim: Dh, independent of D / H (Qwen3-0.6B: D=1024, H=16, Dh=128).
      rope_theta: RoPE base.
      rms_norm_eps: epsilon inside RMSNorm.
      tie_word_embeddings: the LM head is ``embed.T``.
      qk_norm: Qwen3's per-head RMSNorm on q and k before RoPE.
      max_position_embeddings: informational; the sampler's cache length is separate.
      architecture: the HF class name this was read from (export writes it back).
      bos_token_id / eos_token_id: from the config (eos may be a list in HF configs).
    """

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = False
    qk_norm: bool = True
    max_position_embeddings: int = 32768
    architecture: str = "Qwen3ForCausalLM"
    bos_token_id: int | None = None
    eos_token_id: tuple[int, ...] = ()

    def __post_init__(self):
        for f in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads",
                  "num_kv_heads", "head_dim"):
            if int(getattr(self, f)) <= 0:
                raise ConfigError(f"config field {f!r} must be positive, got {getattr(self, f)!r}")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(
                f"num_attention_heads={self.num_heads} is not a multiple of "
                f"num_key_value_heads={self.num_kv_heads}")

    @property
    def q_per_kv(self) -> int:
        return self.num_heads // self.num_kv_heads

    def num_params(self) -> int:
        """Parameter count of the tree ``init_params`` builds (embedding counted once if tied)."""
        D, F, H, KV, Dh, V, L = (self.hidden_size, self.intermediate_size, self.num_heads,
                                 self.num_kv_heads, self.head_dim, self.vocab_size, self.num_layers)
        per_layer = 2 * D + D * H * Dh + 2 * D * KV * Dh + H * Dh * D + 3 * D * F
        if self.qk_norm:
            per_layer += 2 * Dh
        return V * D + L * per_layer + D + (0 if self.tie_word_embeddings else D * V)

    @classmethod
    def from_hf_dict(cls, d: dict[str, Any]) -> "ModelConfig":
        """Parse a HF ``config.json`` dict. Raises ConfigError naming the missing field.

        Accepts both a top-level ``rope_theta`` (older checkpoints) and transformers-5
        ``rope_parameters.rope_theta``. Rope scaling other than default is refused.
        """
        arch = (d.get("architectures") or [None])[0] or _MODEL_TYPES.get(d.get("model_type", ""))
        if arch not in _QK_NORM_ARCHS:
            raise ConfigError(
                f"unsupported architecture {arch!r} (model_type={d.get('model_type')!r}); "
                f"supported: {sorted(_QK_NORM_ARCHS)}")

        def need(key):
            if key not in d or d[key] is None:
                raise ConfigError(f"config.json lacks required field {key!r} for {arch}")
            return d[key]

        heads = int(need("num_attention_heads"))
        hidden = int(need("hidden_size"))
        rope = d.get("rope_parameters") or d.get("rope_scaling") or {}
        theta = d.get("rope_theta", rope.get("rope_theta"))
        if theta is None:
            raise ConfigError("config.json has neither 'rope_theta' nor 'rope_parameters.rope_theta'")
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type not in (None, "default"):
            raise ConfigError(f"rope type {rope_type!r} is not supported (only 'default')")
        eos = d.get("eos_token_id")
        eos = tuple(eos) if isinstance(eos, (list, tuple)) else (() if eos is None else (int(eos),))
        if d.get("attention_bias") or d.get("mlp_bias"):
            raise ConfigError("attention_bias/mlp_bias=True is not supported")
        return cls(
            vocab_size=int(need("vocab_size")),
            hidden_size=hidden,
            intermediate_size=int(need("intermediate_size")),
            num_layers=int(need("num_hidden_layers")),
            num_heads=heads,
            num_kv_heads=int(d.get("num_key_value_heads") or heads),
            head_dim=int(d.get("head_dim") or hidden // heads),
            rope_theta=float(theta),
            rms_norm_eps=float(d.get("rms_norm_eps", 1e-6)),
            tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
            qk_norm=_QK_NORM_ARCHS[arch],
            max_position_embeddings=int(d.get("max_position_embeddings", 32768)),
            architecture=arch,
            bos_token_id=d.get("bos_token_id"),
            eos_token_id=eos,
        )

    @classmethod
    def from_pretrained(cls, path: str | pathlib.Path) -> "ModelConfig":
        p = pathlib.Path(path) / "config.json"
        if not p.is_file():
            raise ConfigError(f"no config.json in checkpoint folder {path}")
        return cls.from_hf_dict(json.loads(p.read_text()))

    def to_hf_dict(self) -> dict[str, Any]:
        """The ``config.json`` dict that transformers reloads to the same function."""
        model_type = {v: k for k, v in _MODEL_TYPES.items()}[self.architecture]
        d = {
            "architectures": [self.architecture],
            "model_type": model_type,
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "rope_theta": self.rope_theta,
            "rms_norm_eps": self.rms_norm_eps,
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_position_embeddings": self.max_position_embeddings,
            "hidden_act": "silu",
            "attention_bias": False,
            "torch_dtype": "float32",
        }
        if self.bos_token_id is not None:
            d["bos_token_id"] = self.bos_token_id
        if self.eos_token_id:
            d["eos_token_id"] = list(self.eos_token_id) if len(self.eos_token_id) > 1 else self.eos_token_id[0]
        return d


# Named shapes for benchmarks (public Qwen3 configs; random weights).
NAMED_SHAPES: dict[str, dict[str, Any]] = {
    "qwen3-0.6b": dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_layers=28,
                       num_heads=16, num_kv_heads=8, head_dim=128, tie_word_embeddings=True),
    "qwen3-1.7b": dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_layers=28,
                       num_heads=16, num_kv_heads=8, head_dim=128, tie_word_embeddings=True),
    "qwen3-8b": dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_layers=36,
                     num_heads=32, num_kv_heads=8, head_dim=128, tie_word_embeddings=False),
}


def named_config(name: str) -> ModelConfig:
    if name not in NAMED_SHAPES:
        raise ConfigError(f"unknown model shape {name!r}; known: {sorted(NAMED_SHAPES)}")
    return ModelConfig(rope_theta=1_000_000.0, max_position_embeddings=40960, **NAMED_SHAPES[name])
