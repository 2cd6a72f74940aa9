"""BM25 and dense (real all-MiniLM-L6-v2) retrieval."""
import hashlib
import math

import numpy as np
import pytest

from skillax.skills.library import SkillLibrary
from skillax.skills.repo import SkillRepo
from skillax.skills.retrieval import BM25Index, DenseIndex, load_minilm, tokenize

DOCS = {
    "heat-food": {"name": "heat-food", "description": "Heat food in the microwave"},
    "cool-drink": {"name": "cool-drink", "description": "Cool a drink in the fridge"},
    "clean-plate": {"name": "clean-plate", "description": "Clean a plate at the sink"},
    "find-key": {"name": "find-key", "description": "Search drawers for the key"},
    "slice-bread": {"name": "slice-bread", "description": "Slice bread with a knife"},
}


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


def test_tokenize():
    assert tokenize("Put the apple_in FRIDGE! 2x") == ["put", "the", "apple", "in", "fridge", "2x"]
    assert tokenize("ＡＢＣ 中文技能") == ["abc", "中文技能"]
    assert tokenize("") == []


def _reference_bm25(corpus, query, k1=1.5, b=0.75, eps=0.25):
    """Okapi BM25 written out (rank_bm25's IDF floor: eps * mean IDF for negative IDFs)."""
    n_docs = len(corpus)
    avgdl = sum(map(len, corpus)) / n_docs
    df = {}
    for d in corpus:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log((n_docs - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    floor = eps * sum(idf.values()) / len(idf)
    idf = {t: (v if v >= 0 else floor) for t, v in idf.items()}
    return [sum(idf.get(q, 0) * d.count(q) * (k1 + 1) / (d.count(q) + k1 * (1 - b + b * len(d) / avgdl))
                for q in query) for d in corpus]


def test_bm25_worked_example():
    idx = BM25Index.from_docs(DOCS)
    res = idx.search("heat the plate in microwave", k=10)
    # heat-food matches heat x2, in, the, microwave; clean-plate plate x2, the; cool-drink in, the;
    # find-key only 'the'; slice-bread shares no token and is not returned.
    assert [r[0] for r in res] == ["heat-food", "clean-plate", "cool-drink", "find-key"]
    corpus = [tokenize(f"{d['name']}\n{d['description']}") for d in DOCS.values()]
    ref = dict(zip(DOCS, _reference_bm25(corpus, tokenize("heat the plate in microwave"))))
    for name, score in res:
        assert score == pytest.approx(ref[name], abs=1e-12)
    # By hand: avgdl = 37/5 = 7.4; heat-food has dl = 7, so K = 1.5 (0.25 + 0.75 * 7/7.4) = 1.439189.
    # IDF ln((5 - n + .5)/(n + .5)): heat, microwave (n=1) 1.098612; in (n=2) 0.336472; the (n=4)
    # is negative -> floor 0.25 * mean IDF over the 22 terms = 0.25 * 18 * 1.098612 / 22 = 0.224716.
    # score = 1.098612*2*2.5/(2+K) + 0.224716*2.5/(1+K) + 0.336472*2.5/(1+K) + 1.098612*2.5/(1+K)
    #       = 1.597195 + 0.230318 + 0.344865 + 1.126001 = 3.298379
    assert res[0][1] == pytest.approx(3.298379, abs=2e-6)
    assert [r[0] for r in idx.search("heat the plate in microwave", k=2)] == ["heat-food", "clean-plate"]
    assert idx.search("", k=3) == [] and idx.search("zebra", k=3) == []


def test_bm25_fields_small_repo_and_updates(tmp_path):
    repo = SkillRepo(tmp_path / "r", durable=False)
    repo.insert("only-skill", "Open doors.", "Use the key from the drawer.")
    assert BM25Index.from_repo(repo).search("key") == []                       # body not indexed
    hits = BM25Index.from_repo(repo, fields=("name", "description", "body")).search("key drawer")
    assert [h[0] for h in hits] == ["only-skill"] and hits[0][1] <= 0          # 1-doc IDF quirk
    idx = BM25Index.from_docs(DOCS)
    idx.remove("heat-food")
    idx.set("warm-up", {"name": "warm-up", "description": "Heat things"})
    assert idx.search("heat")[0][0] == "warm-up" and len(idx) == 5
    assert idx.search_batch(["heat", "knife"], k=1) == [idx.search("heat", 1), idx.search("knife", 1)]


def test_minilm_reference_cosine(minilm):
    assert minilm.cosine("The weather is lovely today.", "It's so sunny outside!") == \
        pytest.approx(0.6660, abs=1e-3)
    e = minilm.encode(["a", "b"])
    assert e.shape == (2, 384) and e.dtype == np.float32
    assert np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)


SKILLS = ["Heat an apple in the microwave before putting it on the table.",
          "Cool a bottle of wine in the fridge.",
          "Clean a mug in the sink basin, then put it in the coffee machine.",
          "Find the keys in a drawer and put them in the safe.",
          "Slice bread with a knife on the countertop.",
          "Examine a book under the desk lamp."]


def test_dense_threshold_and_top_k(minilm):
    idx = DenseIndex(minilm.encode, threshold=0.4, top_k=2)
    idx.add(list(range(len(SKILLS))), SKILLS)
    q = "warm up an apple with the microwave"
    cos = minilm.encode(SKILLS) @ minilm.encode([q])[0]
    full = idx.search(q, k=10, threshold=-1.0)
    assert [i for i, _ in full] == list(np.argsort(-cos, kind="stable"))
    assert np.allclose([c for _, c in full], np.sort(cos)[::-1], atol=1e-5)
    top = idx.search(q)
    assert len(top) <= 2 and top[0][0] == 0 and all(c >= 0.4 for _, c in top)
    assert [i for i, _ in idx.search(q, k=10)] == [i for i, c in full if c >= 0.4]
    assert idx.search(q, threshold=0.99) == []
    batch = idx.search_batch([q, "slice bread"], k=1)
    single = [idx.search(q, k=1), idx.search("slice bread", k=1)]
    assert [[i for i, _ in r] for r in batch] == [[i for i, _ in r] for r in single] == [[0], [4]]
    assert np.allclose([r[0][1] for r in batch], [r[0][1] for r in single], atol=1e-5)


def _hash_encode(texts):
    """Deterministic toy encoder (normalised byte-hash vectors) for bookkeeping tests."""
    rows = []
    for t in texts:
        v = np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8).astype(np.float32) - 127.5
        rows.append(v / np.linalg.norm(v))
    return np.stack(rows) if rows else np.zeros((0, 32), np.float32)


def test_dense_incremental_updates():
    idx = DenseIndex(_hash_encode, threshold=-1.0, top_k=100)
    texts = {i: f"skill {i}" for i in range(40)}
    assert idx.sync(texts) == (40, 0) and idx.n_encoded == 40
    texts[3] = "skill three, changed"
    del texts[7], texts[0]
    texts[99] = "new skill"
    assert idx.sync(texts) == (2, 2) and idx.n_encoded == 42
    assert idx.sync(texts) == (0, 0)
    assert set(idx.ids) == set(texts) and len(idx) == 39
    expected = _hash_encode([texts[i] for i in idx.ids])
    assert np.allclose(idx.embeddings(), expected)
    fresh = DenseIndex(_hash_encode, threshold=-1.0, top_k=100)
    fresh.add(list(texts), list(texts.values()))
    got = sorted(idx.search("skill 5"), key=lambda x: x[0])
    want = sorted(fresh.search("skill 5"), key=lambda x: x[0])
    assert [g[0] for g in got] == [w[0] for w in want]
    assert np.allclose([g[1] for g in got], [w[1] for w in want])
    assert idx.remove([12345]) == 0
    assert DenseIndex(_hash_encode).search("x") == []


def test_library_merge_with_minilm(minilm):
    lib = SkillLibrary(":memory:", embed_fn=minilm.encode)
    a = lib.add("put a hot apple in the fridge", "Heat then cool", "Action lesson: heat first.", step=0)
    m = lib.add("put a hot apple in fridge", "Heat then cool", "Action lesson: heat first.", step=1)
    assert m.status == "merged" and m.id == a.id and m.cosine > 0.85
    d = lib.add("slice the bread with a knife", "Slicing", "Action lesson: heat first.", step=2)
    assert d.status == "inserted"
    idx = DenseIndex(minilm.encode)
    idx.sync(lib.retrieval_texts())
    assert idx.search("heat an apple and cool it")[0][0] == a.id
