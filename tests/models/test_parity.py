"""Exact parity of our forward with transformers (fp32), checkpoint load/export round trips."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from skillax.models import hf_io, transformer
from skillax.models.config import ConfigError, ModelConfig
from tests.models.hf_fixtures import VARIANTS, make_hf_model, save_hf_model

LENGTHS = [7, 3, 11, 1]


def _batch(vocab, lengths, seed=0):
    rng = np.random.default_rng(seed)
    T = max(lengths)
    tokens = np.zeros((len(lengths), T), np.int32)
    valid = np.zeros((len(lengths), T), bool)
    for b, n in enumerate(lengths):
        tokens[b, :n] = rng.integers(3, vocab, n)
        valid[b, :n] = True
    positions = np.broadcast_to(np.arange(T, dtype=np.int32), tokens.shape).copy()
    return tokens, positions, valid


def _ours(params, cfg, tokens, positions, valid):
    h, _ = jax.jit(transformer.forward, static_argnums=1)(params, cfg, tokens, positions, valid)
    return np.asarray(transformer.logits(params, cfg, h))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_logits_match_transformers(variant, tmp_path):
    folder = save_hf_model(variant, tmp_path / variant)
    hf = make_hf_model(variant)
    params, cfg = hf_io.load_hf_checkpoint(folder)
    tokens, positions, valid = _batch(cfg.vocab_size, LENGTHS)
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(tokens, dtype=torch.long),
                 attention_mask=torch.tensor(valid, dtype=torch.long),
                 position_ids=torch.tensor(positions, dtype=torch.long)).logits.numpy()
    ours = _ours(params, cfg, tokens, positions, valid)
    diff = np.abs(ours - ref)[valid]
    assert diff.max() <= 1e-5, diff.max()


def test_left_padded_rows_equal_unpadded(tmp_path):
    folder = save_hf_model("qwen3_tied_gqa42", tmp_path / "m")
    params, cfg = hf_io.load_hf_checkpoint(folder)
    tokens, positions, valid = _batch(cfg.vocab_size, [6])
    ref = _ours(params, cfg, tokens, positions, valid)[0]
    pad = 4
    lt = np.concatenate([np.zeros((1, pad), np.int32), tokens], 1)
    lv = np.concatenate([np.zeros((1, pad), bool), valid], 1)
    lp = np.maximum(np.cumsum(lv, 1) - 1, 0).astype(np.int32)
    got = _ours(params, cfg, lt, lp, lv)[0, pad:]
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_export_reload_identity(tmp_path):
    import transformers

    folder = save_hf_model("qwen3_untied_gqa62", tmp_path / "src")
    params, cfg = hf_io.load_hf_checkpoint(folder)
    out = hf_io.export_hf_checkpoint(params, cfg, tmp_path / "export")
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(str(out)).float().eval()
    tokens, positions, valid = _batch(cfg.vocab_size, LENGTHS, seed=1)
    with torch.no_grad():
        ref = reloaded(input_ids=torch.tensor(tokens, dtype=torch.long),
                       attention_mask=torch.tensor(valid, dtype=torch.long),
                       position_ids=torch.tensor(positions, dtype=torch.long)).logits.numpy()
    ours = _ours(params, cfg, tokens, positions, valid)
    assert np.abs(ours - ref)[valid].max() <= 1e-5
    params2, cfg2 = hf_io.load_hf_checkpoint(out)
    assert cfg2 == cfg
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(np.asarray(a), np.asarray(b)), params, params2)


def test_transformers5_rope_parameters_accepted():
    d = dict(architectures=["Qwen3ForCausalLM"], vocab_size=10, hidden_size=8, intermediate_size=16,
             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=4,
             rope_parameters={"rope_type": "default", "rope_theta": 12345.0})
    assert ModelConfig.from_hf_dict(d).rope_theta == 12345.0
    d2 = dict(d, rope_theta=777.0)
    d2.pop("rope_parameters")
    assert ModelConfig.from_hf_dict(d2).rope_theta == 777.0


def test_bad_checkpoints_name_the_problem(tmp_path):
    folder = save_hf_model("qwen3_tied_gqa42", tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    # unknown architecture
    bad = dict(cfg, architectures=["GPT2LMHeadModel"], model_type="gpt2")
    with pytest.raises(ConfigError, match="GPT2LMHeadModel"):
        ModelConfig.from_hf_dict(bad)
    # missing field
    bad = dict(cfg)
    bad.pop("num_hidden_layers")
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        ModelConfig.from_hf_dict(bad)
    # mis-shaped tensor: claim a wider MLP than the weights have
    (folder / "config.json").write_text(json.dumps(dict(cfg, intermediate_size=100)))
    with pytest.raises(hf_io.CheckpointError, match="mlp.gate_proj.weight"):
        hf_io.load_hf_checkpoint(folder)
    # missing tensor: more layers than stored
    (folder / "config.json").write_text(json.dumps(dict(cfg, num_hidden_layers=4)))
    with pytest.raises(hf_io.CheckpointError, match="model.layers.3"):
        hf_io.load_hf_checkpoint(folder)
    empty = folder.parent / "no_weights"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(hf_io.CheckpointError, match="no model.safetensors"):
        hf_io.load_hf_checkpoint(empty)
