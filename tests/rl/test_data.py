"""grain pipelines: seeded per-epoch shuffling, host shards, iterator state restore, SFT batches."""
import json

import numpy as np
import pytest

from skillax.rl import sft
from skillax.rl.data import make_iterator, read_jsonl, sft_dataset, task_dataset

TASKS = [{"id": i, "family": i % 3} for i in range(10)]


def _ids(it, n):
    return [next(it)["id"] for _ in range(n)]


def test_task_stream_seeded_epochs_and_shards():
    a = _ids(make_iterator(task_dataset(TASKS, seed=1)), 30)
    assert a == _ids(make_iterator(task_dataset(TASKS, seed=1)), 30)           # seeded
    assert a != _ids(make_iterator(task_dataset(TASKS, seed=2)), 30)
    for e in range(3):
        assert sorted(a[10 * e:10 * e + 10]) == list(range(10))                # each epoch a permutation
    assert a[:10] != a[10:20]                                                  # re-drawn per epoch
    assert _ids(make_iterator(task_dataset(TASKS, shuffle=False)), 12) == list(range(10)) + [0, 1]
    shards = [set(_ids(make_iterator(task_dataset(TASKS, seed=1, shard_index=i, shard_count=3,
                                                  num_epochs=1)), n)) for i, n in ((0, 4), (1, 3), (2, 3))]
    assert set().union(*shards) == set(range(10)) and sum(len(s) for s in shards) == 10  # disjoint
    it = make_iterator(task_dataset(TASKS, num_epochs=1))
    assert len(list(it)) == 10


def test_iterator_state_restore_continues_exactly():
    ds = task_dataset(TASKS, seed=3)
    it = make_iterator(ds)
    _ids(it, 13)
    state = it.get_state()
    assert json.loads(json.dumps(state)) == state                              # JSON-able
    expected = _ids(it, 17)
    fresh = make_iterator(task_dataset(TASKS, seed=3))                         # "new process"
    fresh.set_state(state)
    assert _ids(fresh, 17) == expected


def test_bad_pipeline_args(tmp_path):
    with pytest.raises(ValueError, match="shard_index"):
        task_dataset(TASKS, shard_index=3, shard_count=3)
    with pytest.raises(ValueError, match="cannot be split"):
        task_dataset(TASKS[:2], shard_count=3)
    p = tmp_path / "bad.jsonl"
    p.write_text('{"messages": []}\n\n[1, 2]\n')
    with pytest.raises(ValueError, match="bad.jsonl:3: expected a JSON object"):
        read_jsonl(p)
    p.write_text('{"messages": []}\n{"msgs": []}\n')
    with pytest.raises(ValueError, match=":2: record has no 'messages'"):
        read_jsonl(p, require="messages")


def test_sft_batches_with_real_tokenizer(tmp_path):
    from skillax.tokenizers.chat import render_with_masks
    from skillax.tokenizers.qwen3 import load_qwen3_tokenizer
    tok = load_qwen3_tokenizer()
    convs = [{"messages": [{"role": "user", "content": f"What is {i} + {i}?"},
                           {"role": "assistant", "content": f"It is {2 * i}."}]} for i in range(6)]
    path = tmp_path / "sft.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in convs))
    encode = lambda m: render_with_masks(tok, m)  # noqa: E731
    ds = sft_dataset(path, encode, batch_size=4, max_len=48, seed=0, pad_id=tok.pad_token_id or 0)
    it = make_iterator(ds)
    b = next(it)
    assert b["tokens"].shape == (4, 48) and b["loss_mask"].dtype == np.float32
    assert not b["loss_mask"][:, 0].any() and not (b["loss_mask"].astype(bool) & ~b["valid"]).any()
    # the masked tokens decode to exactly the assistant's answer (+ end-of-turn)
    row = b["tokens"][0][b["loss_mask"][0].astype(bool)]
    text = tok.decode(row)
    assert text.startswith("It is ") and text.rstrip().endswith("<|im_end|>"), text
    state = it.get_state()
    nxt = next(it)
    it2 = make_iterator(sft_dataset(path, encode, batch_size=4, max_len=48, seed=0, pad_id=tok.pad_token_id or 0))
    it2.set_state(state)
    np.testing.assert_array_equal(next(it2)["tokens"], nxt["tokens"])


def test_make_example_and_packing():
    ex = sft.make_example([5, 6, 7, 8], [1, 0, 1, 1], max_len=6, pad_id=0)
    np.testing.assert_array_equal(ex["tokens"], [5, 6, 7, 8, 0, 0])
    np.testing.assert_array_equal(ex["loss_mask"], [0, 0, 1, 1, 0, 0])          # position 0 forced 0
    np.testing.assert_array_equal(ex["valid"], [1, 1, 1, 1, 0, 0])
    with pytest.raises(ValueError, match="no assistant token"):
        sft.make_example([1, 2, 3], [0, 0, 1], max_len=2)
    with pytest.raises(ValueError, match="differ in length"):
        sft.make_example([1, 2], [1], max_len=4)
    packed = sft.pack_examples([([1, 2, 3], [0, 1, 1]), ([4, 5, 6, 7], [0, 0, 1, 1]), ([8, 9], [0, 1])], max_len=6)
    np.testing.assert_array_equal(packed["tokens"], [[1, 2, 3, 8, 9, 0], [4, 5, 6, 7, 0, 0]])
    np.testing.assert_array_equal(packed["segment_ids"], [[1, 1, 1, 2, 2, 0], [1, 1, 1, 1, 0, 0]])
    np.testing.assert_array_equal(packed["positions"], [[0, 1, 2, 0, 1, 0], [0, 1, 2, 3, 0, 0]])
    np.testing.assert_array_equal(packed["loss_mask"], [[0, 1, 1, 0, 1, 0], [0, 0, 1, 1, 0, 0]])
