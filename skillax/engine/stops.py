"""Stop conditions: EOS / stop token ids, and stop strings matched on the bytes of the text.

Stop strings -- the approach (sound for byte-level BPE tokenizers such as Qwen3's and
SmolLM2's, where the decoded text is the concatenation of the tokens' bytes):

1. **On device, on bytes.** ``token_byte_table`` spells every vocabulary id as its bytes
   (right-aligned in a ``(V, W)`` uint8 table, true length beside it). The decode loop keeps the
   last ``W + M - 1`` bytes of each row's completion (``M`` = longest stop string) and, after
   each token, checks whether any stop string *ends inside the bytes this token added*. So a
   stop string is caught however the model happened to tokenise it ("</action>" as one token,
   as "</" "action" ">", or inside a token such as "></action>\\n"); the completion stops at
   the token that completes the first occurrence, with reason ``"stop"``. Only generated
   text is searched (never the prompt). A token longer than ``W`` bytes makes its first bytes
   unknown (sentinel) -- no false matches, possibly a miss, which step 2 catches.
2. **On host, on decoded text.** After the call, each row's kept completion is decoded with the
   tokenizer; if a stop string occurs earlier than where the device stopped (or the device
   did not stop), the completion is cut at the fewest tokens whose decoded text contains it,
   and mask / length / stop reason are fixed (``host_stop_cut``). The host check only ever
   shortens a completion. Cache slots past the cut are invalidated before any continuation.

EOS ids and stop token ids are compared against the sampled id on device (reason "eos"
takes precedence over "stop"). The completion mask comes from the loop's ``done`` flags, never
from token values, so a pad id equal to an EOS id is harmless (PITFALLS 10).
"""

from __future__ import annotations

import json
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

#: byte value of unknown / empty positions of the tail buffer (never equals a real byte).
SENTINEL = -1
#: cap on the width of the token byte table (longer tokens: see module docstring).
MAX_TOKEN_BYTES = 64


def pad_ids(ids: Sequence[int], size: int) -> np.ndarray:
    """Token-id list -> (size,) int32 padded with -1 (matches no token). Raises ValueError."""
    ids = sorted(set(int(i) for i in ids))
    if len(ids) > size:
        raise ValueError(f"at most {size} ids supported here, got {len(ids)}: {ids}")
    out = np.full((size,), -1, np.int32)
    out[: len(ids)] = ids
    return out


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable-unicode alphabet used by byte-level BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def token_bytes(tokenizer, vocab_size: int) -> list[bytes]:
    """Bytes each id decodes to, for ids ``0 .. vocab_size-1`` (b"" for ids the tokenizer lacks).

    Byte-level BPE (decoder ``ByteLevel``): vocabulary strings mapped back through GPT-2's
    alphabet. Otherwise (SentencePiece-style): ``\u2581`` -> space and ``<0xNN>`` -> byte.
    Added tokens (``<|im_end|>``, ``<think>``, ...) are their literal content.
    """
    backend = json.loads(tokenizer.backend_tokenizer.to_str())
    dec = backend.get("decoder") or {}
    kinds = {dec.get("type")} | {d.get("type") for d in dec.get("decoders", []) or []}
    byte_level = "ByteLevel" in kinds
    byte_decoder = {c: b for b, c in _bytes_to_unicode().items()}
    added = {int(i): t.content for i, t in tokenizer.added_tokens_decoder.items()}
    pieces = tokenizer.convert_ids_to_tokens(list(range(min(vocab_size, len(tokenizer)))))
    out = []
    for i in range(vocab_size):
        if i in added:
            out.append(added[i].encode("utf-8"))
            continue
        piece = pieces[i] if i < len(pieces) else None
        if piece is None:
            out.append(b"")
        elif byte_level and all(c in byte_decoder for c in piece):
            out.append(bytes(byte_decoder[c] for c in piece))
        elif piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:
            out.append(bytes([int(piece[3:5], 16)]))
        else:
            out.append(piece.replace("\u2581", " ").encode("utf-8"))
    return out


def token_byte_table(tokenizer, vocab_size: int, width: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(V, W) uint8 table of each id's bytes, right-aligned, and (V,) int32 true byte lengths.

    W = the longest token's byte length, capped at ``MAX_TOKEN_BYTES`` (or ``width``); for a
    longer token only its last W bytes are stored while its length stays the true one.
    """
    spelled = token_bytes(tokenizer, vocab_size)
    lens = np.array([len(b) for b in spelled], np.int32)
    W = int(width or min(max(1, int(lens.max())), MAX_TOKEN_BYTES))
    table = np.zeros((vocab_size, W), np.uint8)
    for i, b in enumerate(spelled):
        b = b[-W:]
        if b:
            table[i, W - len(b):] = np.frombuffer(b, np.uint8)
    return table, lens


def encode_stop_strings(stop_strings: Sequence[str], max_count: int, max_bytes: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Stop strings -> (max_count, max_bytes) int32 right-aligned bytes (-2 pad) and lengths.

    Raises ValueError when there are more than ``max_count`` strings or one is longer than
    ``max_bytes`` bytes (utf-8).
    """
    if len(stop_strings) > max_count:
        raise ValueError(f"at most {max_count} stop strings supported, got {len(stop_strings)}")
    arr = np.full((max_count, max_bytes), -2, np.int32)
    lens = np.zeros((max_count,), np.int32)
    for i, s in enumerate(stop_strings):
        b = s.encode("utf-8")
        if len(b) > max_bytes:
            raise ValueError(f"stop string {s!r} is {len(b)} bytes; at most {max_bytes} supported")
        arr[i, max_bytes - len(b):] = np.frombuffer(b, np.uint8)
        lens[i] = len(b)
    return arr, lens


def init_tail(batch: int, token_width: int, max_stop_bytes: int) -> jax.Array:
    """Empty tail buffer (B, W + M - 1) int32 of SENTINEL."""
    return jnp.full((batch, token_width + max_stop_bytes - 1), SENTINEL, jnp.int32)


def append_bytes(tail: jax.Array, tok_bytes: jax.Array, tok_len: jax.Array) -> jax.Array:
    """Shift a token's bytes into the right end of the tail buffer.

    tail (B, Lb) int32; tok_bytes (B, W) uint8 right-aligned; tok_len (B,) int32 true byte count
    (> W: the bytes before the stored W become SENTINEL). Returns (B, Lb) int32.
    """
    B, Lb = tail.shape
    W = tok_bytes.shape[1]
    n = tok_len[:, None]  # (B, 1)
    j = n + jnp.arange(Lb)[None, :]  # index into logical text ``tail ++ token`` (length Lb + n)
    from_tail = jnp.take_along_axis(tail, jnp.clip(j, 0, Lb - 1), axis=1)
    ti = W - n + (j - Lb)  # index into the right-aligned token bytes
    from_tok = jnp.take_along_axis(tok_bytes.astype(jnp.int32), jnp.clip(ti, 0, W - 1), axis=1)
    from_tok = jnp.where(ti >= 0, from_tok, SENTINEL)
    return jnp.where(j < Lb, from_tail, from_tok)


def match_stops(tail: jax.Array, tok_len: jax.Array, stops: jax.Array, stop_lens: jax.Array
                ) -> jax.Array:
    """Does a stop string end inside the last ``tok_len`` bytes of ``tail``?

    tail (B, Lb) int32 (after ``append_bytes``); tok_len (B,) int32; stops (NS, M) int32
    right-aligned (pad -2); stop_lens (NS,) int32 (0 = unused slot). Returns (B,) bool.
    Requires Lb >= W + M - 1 so every end offset inside the token has M bytes of context.
    """
    B, Lb = tail.shape
    NS, M = stops.shape
    W = Lb - M + 1
    ends = Lb - W + jnp.arange(W)  # (W,) candidate end positions (inclusive) of a match
    win_idx = ends[:, None] - (M - 1) + jnp.arange(M)[None, :]  # (W, M)
    windows = tail[:, win_idx]  # (B, W, M)
    used = jnp.arange(M)[None, :] >= (M - stop_lens[:, None])  # (NS, M) positions that count
    eq = (windows[:, :, None, :] == stops[None, None, :, :]) | ~used[None, None]  # (B, W, NS, M)
    hit = jnp.all(eq, axis=-1) & (stop_lens > 0)[None, None, :]  # (B, W, NS)
    in_token = ends[None, :] >= Lb - tok_len[:, None]  # (B, W) end lies in the new bytes
    return jnp.any(hit & in_token[:, :, None], axis=(1, 2))


def host_stop_cut(tokenizer, ids: Sequence[int], stop_strings: Sequence[str]) -> int | None:
    """Fewest leading tokens whose decoded text contains a stop string, or None.

    Binary search over prefix length (containment is monotone in the prefix); decodes with
    special tokens kept and no clean-up, as the device check sees the text.
    """
    ids = list(ids)

    def hit(k):
        text = tokenizer.decode(ids[:k], skip_special_tokens=False,
                                clean_up_tokenization_spaces=False)
        return any(s in text for s in stop_strings)

    if not stop_strings or not ids or not hit(len(ids)):
        return None
    lo, hi = 1, len(ids)
    while lo < hi:
        mid = (lo + hi) // 2
        if hit(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
