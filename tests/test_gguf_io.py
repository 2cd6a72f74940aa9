"""SmolLM2 GGUF -> HF config / fp32 state dict / tokenizer: hand values, transformers parity, real text."""
import unicodedata

import numpy as np
import pytest

from skillax.models.gguf_io import load_gguf, smollm2_gguf_path, unpermute_qk
from skillax.tokenizers import render
from tests._smollm2 import smollm2

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py `LlamaModel.permute` (the forward transform llama.cpp applies to q/k)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@pytest.fixture(scope="module")
def loaded():
    return smollm2()


def _no_init():
    try:
        from transformers.initialization import no_init_weights  # transformers 5
    except ImportError:  # transformers 4
        from transformers.modeling_utils import no_init_weights
    return no_init_weights()


def build_model(cfg, sd):
    """LlamaForCausalLM(LlamaConfig(**cfg)) with `sd` loaded (no wasted random init)."""
    with _no_init():
        m = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg)).eval()
    return m, m.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=False)


@pytest.fixture(scope="module")
def model(loaded):
    cfg, sd, _ = loaded
    m, result = build_model(cfg, sd)
    assert result.missing_keys == ["lm_head.weight"] and not result.unexpected_keys  # tied head
    m.tie_weights()
    assert m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr()
    return m


def test_unpermute_hand_values():
    # One head, head_dim 4: HF rows (a0, a1, b0, b1) are stored by llama.cpp as (a0, b0, a1, b1).
    gguf_rows = np.array([[0.0], [2.0], [1.0], [3.0]])
    assert unpermute_qk(gguf_rows, 1)[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    # Two heads of 4: [0, 2, 1, 3 | 4, 6, 5, 7] -> 0..7.
    two = np.array([0, 2, 1, 3, 4, 6, 5, 7], dtype=np.float32)[:, None]
    assert unpermute_qk(two, 2)[:, 0].tolist() == list(range(8))
    w = np.random.default_rng(0).standard_normal((9 * 64, 5)).astype(np.float32)
    for n in (9, 3, 1):
        np.testing.assert_array_equal(unpermute_qk(llama_cpp_permute(w[: n * 64], n), n), w[: n * 64])
    with pytest.raises(ValueError, match="even head_dim"):
        unpermute_qk(np.zeros((6, 2)), 2)  # head_dim 3


def test_config(loaded):
    cfg, _, _ = loaded
    expect = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                  num_attention_heads=9, num_key_value_heads=3, head_dim=64, rope_theta=100000.0,
                  rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
                  pad_token_id=2, max_position_embeddings=8192, architectures=["LlamaForCausalLM"])
    assert {k: cfg[k] for k in expect} == expect
    assert cfg["rope_parameters"]["rope_theta"] == 100000.0
    c = transformers.LlamaConfig(**cfg)
    assert (c.hidden_size, c.num_key_value_heads, c.tie_word_embeddings) == (576, 3, True)


def test_state_dict_layout(loaded):
    _, sd, _ = loaded
    assert len(sd) == 272 and "lm_head.weight" not in sd
    assert all(v.dtype == np.float32 and v.flags.c_contiguous for v in sd.values())
    assert sd["model.embed_tokens.weight"].shape == (49152, 576)
    assert sd["model.layers.0.self_attn.q_proj.weight"].shape == (576, 576)
    assert sd["model.layers.0.self_attn.k_proj.weight"].shape == (192, 576)
    assert sd["model.layers.29.mlp.down_proj.weight"].shape == (576, 1536)
    assert sum(v.size for v in sd.values()) == 134_515_008


@pytest.mark.slow
def test_tensors_equal_transformers_gguf_loader(loaded, model):
    """Every tensor bit-identical to transformers' own GGUF conversion (independent Q/K unpermute)."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    _, sd, _ = loaded
    ref = load_gguf_checkpoint(str(smollm2_gguf_path()), return_tensors=True, model_to_load=model)
    assert set(ref["tensors"]) == set(sd)
    for name, tensor in ref["tensors"].items():
        np.testing.assert_array_equal(tensor.float().numpy(), sd[name], err_msg=name)


def test_greedy_answer_mentions_paris(loaded, model):
    _, _, tok = loaded
    prompt = render(tok, [{"role": "user", "content": "What is the capital of France?"}])
    ids = torch.tensor([tok.encode(prompt, add_special_tokens=False)])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=10, do_sample=False, eos_token_id=tok.eos_token_id,
                             pad_token_id=tok.pad_token_id)
    text = tok.decode(out[0, ids.shape[1]:])
    assert "Paris" in text, text


def test_wrong_qk_order_loses_the_answer(loaded, model):
    """Control: the next token after '...France is' is ' Paris' only with the unpermuted Q/K."""
    cfg, sd, tok = loaded
    prompt = render(tok, [{"role": "user", "content": "What is the capital of France?"}])
    ids = torch.tensor([tok.encode(prompt + "The capital of France is", add_special_tokens=False)])
    paris = tok.encode(" Paris")
    assert len(paris) == 1
    with torch.no_grad():
        assert int(model(ids).logits[0, -1].argmax()) == paris[0]
    # The same weights with Q/K left in llama.cpp's row order (what skipping `unpermute_qk` gives).
    heads = {"q_proj": cfg["num_attention_heads"], "k_proj": cfg["num_key_value_heads"]}
    raw = {k: llama_cpp_permute(v, heads[k.split(".")[-2]]) for k, v in sd.items() if k.split(".")[-2] in heads}
    try:
        model.load_state_dict({k: torch.from_numpy(v) for k, v in raw.items()}, strict=False)
        with torch.no_grad():
            assert int(model(ids).logits[0, -1].argmax()) != paris[0]
    finally:
        model.load_state_dict({k: torch.from_numpy(sd[k]) for k in raw}, strict=False)


def test_tokenizer(loaded):
    _, _, tok = loaded
    assert len(tok) == 49152
    assert (tok.eos_token, tok.eos_token_id) == ("<|im_end|>", 2)
    assert (tok.bos_token_id, tok.pad_token_id, tok.unk_token_id) == (1, 2, 0)
    assert tok.encode("<|im_start|>user\nhi<|im_end|>", add_special_tokens=False)[0] == 1
    assert tok.encode("Hello world", add_special_tokens=False) == [19556, 905]
    # smollm pre-tokenizer: every digit alone (llama.cpp LLAMA_VOCAB_PRE_TYPE_SMOLLM).
    assert tok.tokenize(" 2024") == ["Ġ", "2", "0", "2", "4"]
    for s in ["Hello, world!", "  two  spaces\n\nand\ttabs", "café 日本語 🎉", "x = [1, 22, 333]\n", "don't"]:
        ids = tok.encode(s, add_special_tokens=False)
        assert tok.decode(ids) == s
        assert all(0 <= i < 49152 for i in ids)


@pytest.mark.slow
def test_tokenizer_matches_transformers_gguf_tokenizer(loaded):
    """Same ids as transformers' GGUF tokenizer on text without \\p{N} characters.

    (transformers builds SmolLM's pre-tokenizer as plain GPT-2 without llama.cpp's / SmolLM2's
    per-digit split; they differ only around numeric characters such as '½'.)
    """
    from tests.test_tokenizer_qwen3 import _corpus

    _, _, tok = loaded
    path = smollm2_gguf_path()
    ref = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    texts = [s for s in _corpus() if not any(unicodedata.category(c).startswith("N") for c in s)]
    assert len(texts) >= 100
    for s in texts:
        assert tok.encode(s, add_special_tokens=False) == ref.encode(s, add_special_tokens=False), s


def test_chat_template_from_metadata(loaded):
    _, _, tok = loaded
    text = render(tok, [{"role": "user", "content": "Hi"}])
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                    "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    with pytest.raises(ValueError, match="tools"):
        render(tok, [{"role": "user", "content": "Hi"}], tools=[{"type": "function", "function": {"name": "f"}}])


def test_missing_files(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError):
        load_gguf(tmp_path / "nope.gguf")
    monkeypatch.setenv("SKILLAX_SMOLLM2_GGUF", str(tmp_path / "nope.gguf"))
    with pytest.raises(FileNotFoundError, match="SKILLAX_SMOLLM2_GGUF"):
        smollm2_gguf_path()


def test_load_tokenizer_prefers_folder_files(loaded, tmp_path):
    """A checkpoint folder with its own tokenizer files is loaded from them (no GGUF parsing)."""
    from skillax.tokenizers import load_tokenizer

    _, _, tok = loaded
    tok.save_pretrained(str(tmp_path))
    again = load_tokenizer(tmp_path)
    assert again.encode("Hello world 2024", add_special_tokens=False) == [19556, 905, 216, 34, 32, 34, 36]
    assert again.chat_template == tok.chat_template and again.eos_token == "<|im_end|>"
