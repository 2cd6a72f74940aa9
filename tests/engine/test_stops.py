"""Stop strings on device (bytes) against the decoded text; host cut; id padding; buckets."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.engine import stops
from skillax.engine.buckets import Buckets

from tests.engine.conftest import VOCAB


def test_token_bytes_concatenate_to_decoded_text(tokenizer):
    spelled = stops.token_bytes(tokenizer, VOCAB)
    assert spelled[tokenizer.convert_tokens_to_ids("<|im_end|>")] == b"<|im_end|>"
    assert all(b == b"" for b in spelled[len(tokenizer):])
    rng = np.random.default_rng(0)
    for _ in range(50):
        ids = rng.integers(0, len(tokenizer), size=12).tolist()
        text = b"".join(spelled[i] for i in ids).decode("utf-8", errors="replace")
        assert text == tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


@functools.partial(jax.jit, static_argnames=())
def _scan_match(ids, table, lens, sb, sl):
    """First token index (1-based count) at which a stop string completes, 0 if none."""
    tail0 = stops.init_tail(1, table.shape[1], sb.shape[1])

    def step(tail, tok):
        n = lens[tok][None]
        tail = stops.append_bytes(tail, table[tok][None], n)
        return tail, stops.match_stops(tail, n, sb, sl)[0]

    _, hits = jax.lax.scan(step, tail0, ids)
    return jnp.where(jnp.any(hits), jnp.argmax(hits) + 1, 0)


def _device_cut(tokenizer, ids, stop_strings, width=None):
    table, lens = stops.token_byte_table(tokenizer, VOCAB, width)
    sb, sl = stops.encode_stop_strings(stop_strings, 4, 16)
    k = int(_scan_match(jnp.asarray(ids, jnp.int32), table, lens, sb, sl))
    return k or None


@pytest.mark.parametrize("pieces", [
    ["<action>go north", "</action>", " then more"],
    ["<action>go north", "</", "act", "ion", ">", " x"],
    ["<action>go north</act", "ion>\n", "</action>"],
    ["<think>no stop here at all"],
])
def test_device_match_is_independent_of_tokenisation(tokenizer, pieces):
    ids = [i for p in pieces for i in tokenizer.encode(p, add_special_tokens=False)]
    host = stops.host_stop_cut(tokenizer, ids, ["</action>", "</rank>"])
    assert _device_cut(tokenizer, ids, ["</action>", "</rank>"]) == host
    if "</action>" in "".join(pieces):
        text = tokenizer.decode(ids[:host])
        assert "</action>" in text and "</action>" not in tokenizer.decode(ids[:host - 1])


def test_device_match_random_sequences(tokenizer):
    rng = np.random.default_rng(1)
    strs = ["e ", "the", "1", "</"]
    for _ in range(20):
        ids = rng.integers(3, len(tokenizer), size=16).tolist()
        assert _device_cut(tokenizer, ids, strs) == stops.host_stop_cut(tokenizer, ids, strs)


def test_narrow_table_never_matches_falsely(tokenizer):
    """Tokens longer than the table width lose their first bytes to SENTINEL: misses allowed
    (the host post-check catches them), false matches never."""
    rng = np.random.default_rng(2)
    for _ in range(20):
        ids = rng.integers(3, len(tokenizer), size=16).tolist()
        host = stops.host_stop_cut(tokenizer, ids, ["th", "e "])
        dev = _device_cut(tokenizer, ids, ["th", "e "], width=1)
        assert dev is None or (host is not None and dev >= host)


def test_append_bytes_hand_computed():
    tail = jnp.full((1, 5), stops.SENTINEL, jnp.int32)
    tok = jnp.array([[0, ord("a"), ord("b")]], jnp.uint8)  # "ab" right-aligned in width 3
    tail = stops.append_bytes(tail, tok, jnp.array([2]))
    assert tail.tolist() == [[-1, -1, -1, ord("a"), ord("b")]]
    tail = stops.append_bytes(tail, jnp.array([[ord("x"), ord("y"), ord("z")]], jnp.uint8), jnp.array([5]))
    assert tail.tolist() == [[-1, -1, ord("x"), ord("y"), ord("z")]]  # 5 > width: 2 unknown bytes


def test_host_stop_cut(tokenizer):
    ids = tokenizer.encode("go north</action> and more", add_special_tokens=False)
    k = stops.host_stop_cut(tokenizer, ids, ["</action>"])
    assert tokenizer.decode(ids[:k]).endswith("</action>")
    assert stops.host_stop_cut(tokenizer, ids, ["zzz"]) is None
    assert stops.host_stop_cut(tokenizer, [], ["a"]) is None


def test_id_and_string_tables_errors():
    assert stops.pad_ids([5, 3, 5], 4).tolist() == [3, 5, -1, -1]
    with pytest.raises(ValueError, match="at most 2 ids"):
        stops.pad_ids([1, 2, 3], 2)
    arr, lens = stops.encode_stop_strings(["ab"], 2, 4)
    assert arr.tolist() == [[-2, -2, 97, 98], [-2, -2, -2, -2]] and lens.tolist() == [2, 0]
    with pytest.raises(ValueError, match="at most 1 stop"):
        stops.encode_stop_strings(["a", "b"], 1, 4)
    with pytest.raises(ValueError, match="bytes"):
        stops.encode_stop_strings(["abcdef"], 2, 4)


def test_buckets():
    b = Buckets(batch=(1, 4, 8), prompt=(16, 64), new_tokens=(32,), cache=(64, 128))
    assert [b.pick("batch", n) for n in (1, 2, 4, 5, 8)] == [1, 4, 4, 8, 8]
    assert b.pick("prompt", 17) == 64
    with pytest.raises(ValueError, match="exceeds the largest bucket"):
        b.pick("new_tokens", 33)
    assert b.cache_len(65, 1000) == 128 and b.cache_len(200, 300) == 300 and b.cache_len(100, 100) == 100
    with pytest.raises(ValueError, match="max_len"):
        b.cache_len(101, 100)
    with pytest.raises(ValueError, match="increasing"):
        Buckets(batch=(4, 2))
