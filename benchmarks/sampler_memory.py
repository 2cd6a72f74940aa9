"""Device memory of the sampler's program at the learning campaign's shapes, measured on CPU.

    python benchmarks/sampler_memory.py                   # the campaign's shapes, GPU code paths
    python benchmarks/sampler_memory.py --only skill1_eval --backend-paths cpu

Nothing runs: each shape's program (``skillax.engine.decode.Programs.run``) is lowered with
abstract SmolLM2-135M bf16 params and compiled for the CPU, and ``compiled.memory_analysis()``
gives its argument / output / temp bytes. ``--backend-paths gpu`` (default) traces the program
the way a GPU process would build it (fresh prefill scanned over layers, ``cache_attention``
"auto" = Pallas where the shape allows it, which for SmolLM2's 3 query heads per KV head is
never: the XLA masked attention runs), so the temp bytes are XLA-CPU's buffer assignment of
the GPU program's graph (XLA-GPU fuses differently: the same order of magnitude, not the same
byte count). On GPU the temp buffer is ONE allocation: the "Out of memory while trying to
allocate N GiB [executable_name='jit__run']" of the campaign logs.

Prints one JSON line per shape: rows, batch bucket, prefill rows, chunk T, new tokens, cache
slots S, the KV cache bytes (argument, donated), temp bytes, and the predicted peak
(``Sampler.call_bytes``, the guard of ``model.sampler_memory_gb``) next to the measured
temp + KV cache.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from skillax.engine.buckets import Buckets  # noqa: E402
from skillax.engine.sampler import Sampler  # noqa: E402
from skillax.engine.sampling import SamplingParams  # noqa: E402
from skillax.models.config import ModelConfig  # noqa: E402
from skillax.models.kv_cache import cache_bytes  # noqa: E402
from skillax.models.params import init_params  # noqa: E402

SMOLLM2 = ModelConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_layers=30, num_heads=9,
                      num_kv_heads=3, head_dim=64, rope_theta=100000.0, rms_norm_eps=1e-5,
                      tie_word_embeddings=True, qk_norm=False, max_position_embeddings=8192,
                      architecture="LlamaForCausalLM", eos_token_id=(2,))

#: name -> (rows, prompt lengths (cycled), max_new_tokens, model.max_len, distinct prompts or 0 = all)
SHAPES = {
    # Skill1 eval chunk: eval.batch_size 140 play prompts of ~500-700 tokens, 128-token actions
    "skill1_eval": (140, (520, 610, 700), 128, 4096, 0),
    # Skill1 RL step: 8 tasks x group 4 (turn 0 shares the prompt of a group)
    "skill1_rl": (32, (520, 610, 700), 128, 4096, 8),
    # SkillOS sft arm eval: eval.batch_size 36 executor prompts up to ~1,900 tokens with skills
    "skillos_eval36": (36, (1200, 1600, 1900), 128, 2048, 0),
    # SkillOS RL arm eval: eval.batch_size 140
    "skillos_eval140": (140, (1200, 1600, 1900), 128, 2048, 0),
    # Skill-alpha frozen worker: 4 lanes x 9 x 3 anchors = 108 games, a ~6,000-char skill in context
    "alpha_worker": (108, (1400, 1700, 1900), 64, 8192, 0),
    # Skill-alpha editor: 4 lanes x group 8, prompts up to ~7,800 tokens
    "alpha_editor": (32, (7000, 7400, 7800), 384, 8192, 4),
}


@contextlib.contextmanager
def backend_paths(kind: str):
    """Trace as a ``kind`` process would ("gpu": fresh scanned prefill, auto = Pallas)."""
    if kind == "cpu":
        yield
        return
    with mock.patch.object(jax, "default_backend", lambda: kind):
        yield


def prompts_for(rows, lengths, distinct, seed=0):
    rng = np.random.default_rng(seed)
    n = distinct or rows
    base = [rng.integers(3, SMOLLM2.vocab_size, size=int(lengths[i % len(lengths)])).tolist()
            for i in range(n)]
    return [base[i % n] for i in range(rows)] if distinct else base


def measure(name, *, paths="gpu", share_prefill=True, cache_attention="auto", sampler_kw=None):
    rows, lengths, max_new, max_len, distinct = SHAPES[name]
    params = jax.eval_shape(lambda: jax.tree.map(lambda x: x.astype(jnp.bfloat16),
                                                 init_params(SMOLLM2, jax.random.key(0))))
    s = Sampler(SMOLLM2, None, max_len=max_len, dtype=jnp.bfloat16, buckets=Buckets(),
                share_prefill=share_prefill, cache_attention=cache_attention, **(sampler_kw or {}))
    prompts = prompts_for(rows, lengths, distinct)
    sp = SamplingParams(temperature=1.0, max_new_tokens=max_new)
    t0 = time.perf_counter()
    with backend_paths(paths):
        lowered = s.lower(params, prompts, sp)
        shape = s.last_lower_shape
        pred = s.call_bytes(prompts, sp, params=params) if hasattr(s, "call_bytes") else None
    m = lowered.compile().memory_analysis()
    B, T, n_new, S, Bp = shape["batch"], shape["chunk"], shape["new_bucket"], shape["cache_len"], shape["prefill_rows"]
    kv = cache_bytes(SMOLLM2, B, S, jnp.bfloat16)
    out = dict(name=name, paths=paths, share_prefill=share_prefill, rows=rows, batch=B, prefill_rows=Bp,
               chunk=T, new_bucket=n_new, cache_len=S, prefill_chunk=shape.get("prefill_chunk", T),
               kv_gib=round(kv / 2**30, 3),
               argument_gib=round(m.argument_size_in_bytes / 2**30, 3),
               output_gib=round(m.output_size_in_bytes / 2**30, 3),
               alias_gib=round(m.alias_size_in_bytes / 2**30, 3),
               temp_gib=round(m.temp_size_in_bytes / 2**30, 3),
               compile_s=round(time.perf_counter() - t0, 1))
    if pred is not None:
        # the call's own bytes: temp + the cache argument (params excluded: already resident)
        out["measured_call_gib"] = round((m.temp_size_in_bytes + kv) / 2**30, 3)
        out["predicted_gib"] = round(pred["total"] / 2**30, 3)
        out["predicted_terms_gib"] = {k: round(v / 2**30, 3) for k, v in pred.items() if k != "total"}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated shape names")
    ap.add_argument("--backend-paths", default="gpu", choices=("gpu", "cpu"))
    ap.add_argument("--share-prefill", default="true", choices=("true", "false", "both"))
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n] or list(SHAPES)
    shares = {"true": (True,), "false": (False,), "both": (True, False)}[a.share_prefill]
    for n in names:
        for sh in shares:
            line = json.dumps(measure(n, paths=a.backend_paths, share_prefill=sh))
            print(line, flush=True)
            if a.out:
                with open(a.out, "a") as f:
                    f.write(line + "\n")


if __name__ == "__main__":
    main()
