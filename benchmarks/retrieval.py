"""Dense skill retrieval: 5000 library skills, one batch of 128 queries (Skill1 selection step).

    HF_HUB_OFFLINE=1 python benchmarks/retrieval.py [--n-skills 5000] [--batch 128] [--k 5]

Encoder: all-MiniLM-L6-v2 (sentence-transformers, offline package), CPU unless --device.
Measures (median of --iters): index build (encode all skills once), query encoding for the batch,
and the search itself (cosine matrix + threshold 0.4 + top-K) of `DenseIndex.search_batch`.
Reference from the same run: `sentence_transformers.util.semantic_search` (PyTorch) on the same
embeddings, for the search part. Prints one JSON line (no jax: the skills layer is jax-free).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import shlex
import sys
import time


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from skillax.skills.retrieval import DenseIndex, MiniLMEncoder  # noqa: E402

VERBS = ["heat", "cool", "clean", "slice", "examine", "put", "find", "stack", "open", "carry"]
OBJECTS = ["apple", "mug", "plate", "bread", "book", "keys", "wine bottle", "lettuce", "pan", "vase",
           "pencil", "towel", "egg", "potato", "cellphone", "laptop", "pillow", "candle"]
PLACES = ["fridge", "microwave", "sink basin", "countertop", "drawer", "shelf", "desk", "cabinet",
          "garbage can", "dining table", "sofa", "safe", "stove burner", "coffee machine"]


def make_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"When asked to {rng.choice(VERBS)} the {rng.choice(OBJECTS)}, first check the "
            f"{rng.choice(PLACES)}, then use the {rng.choice(PLACES)}; avoid the {rng.choice(PLACES)}."
            for _ in range(n)]


def median_time(fn, iters: int) -> float:
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-skills", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--threshold", type=float, default=0.4)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    enc = MiniLMEncoder(device=args.device)
    skills, queries = make_texts(args.n_skills, 0), make_texts(args.batch, 1)
    idx = DenseIndex(enc.encode, threshold=args.threshold, top_k=args.k)
    t = time.perf_counter()
    idx.add(list(range(len(skills))), skills)
    build_s = time.perf_counter() - t

    enc.encode(queries)  # warm-up
    encode_s = median_time(lambda: enc.encode(queries), args.iters)
    q_emb = enc.encode(queries)
    idx.encode = lambda texts: q_emb  # time the search alone on precomputed query embeddings
    search_s = median_time(lambda: idx.search_batch(queries), args.iters)
    idx.encode = enc.encode
    total_s = median_time(lambda: idx.search_batch(queries), max(1, args.iters // 2))

    import torch
    from sentence_transformers import util
    qt, ct = torch.from_numpy(q_emb), torch.from_numpy(idx.embeddings().copy())
    ref_s = median_time(lambda: util.semantic_search(qt, ct, top_k=args.k), args.iters)
    hits = sum(len(r) for r in idx.search_batch(queries))

    rec = dict(
        name="dense_retrieval", shape=dict(n_skills=args.n_skills, batch=args.batch, k=args.k,
                                           threshold=args.threshold, dim=enc.dim),
        device=f"{args.device}:{platform.processor() or platform.machine()} x{os.cpu_count()} cores",
        ours=round(args.batch / total_s, 2), unit="queries/s (encode + search)",
        search_ms=round(search_s * 1e3, 3), reference_search_ms=round(ref_s * 1e3, 3),
        reference="sentence_transformers.util.semantic_search (torch), search part only",
        query_encode_ms=round(encode_s * 1e3, 1), index_build_s=round(build_s, 2),
        index_build_texts_per_s=round(args.n_skills / build_s, 1), mean_hits_per_query=hits / args.batch,
        limit=None, fraction_of_limit=None,
        command="python " + " ".join(shlex.quote(a) for a in sys.argv),
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
