"""Pre-flight check on the GPU before a campaign spends its lease: the sampler paths that were
only tested on CPU (one prefill per group, per-row keys) against the plain path, at the
SmolLM2-135M shape with random weights, bf16, the Pallas cache attention.

    python benchmarks/device/gpu_check.py      # prints one JSON line; exit 1 when a check fails

Paths checked against the plain one (greedy and sampled at T = 1 with the same keys): one
prefill per group (``share_prefill``), the prefill fed in pieces (``prefill_tokens``), and a
call split into row chunks for a memory budget (``memory_budget``; its split count is printed).
Each passes when the first generated token of >= 90 % of the rows equals the plain sampler's,
and over each row's common prefix with it the mean |logprob difference| is < 2e-2 (bf16: a
prefill of fewer rows may tile differently, and random weights have near-ties that can then flip
a later token); per-row keys ``(step, r)`` reproduce the default keys exactly. A failure of
``shared_prefill`` means: launch the arms with
``--config.model.share_prefill=false``; of ``memory_split``: ``model.sampler_memory_gb=0``.
"""
from __future__ import annotations

import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, ".")

from skillax.engine.buckets import Buckets  # noqa: E402
from skillax.engine.sampler import Sampler  # noqa: E402
from skillax.engine.sampling import SamplingParams  # noqa: E402
from skillax.models.config import ModelConfig  # noqa: E402
from skillax.models.params import init_params  # noqa: E402

SMOLLM2 = ModelConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_layers=30, num_heads=9,
                      num_kv_heads=3, head_dim=64, rope_theta=100000.0, rms_norm_eps=1e-5,
                      tie_word_embeddings=True, qk_norm=False, max_position_embeddings=8192,
                      architecture="LlamaForCausalLM", eos_token_id=(2,))


def main() -> int:
    t0 = time.perf_counter()
    params = jax.tree.map(lambda x: x.astype(jnp.bfloat16), init_params(SMOLLM2, jax.random.key(0)))
    rng = np.random.default_rng(0)
    base = [rng.integers(3, 49152, size=int(n)).tolist() for n in (300, 420, 510, 640)]
    prompts = [p for p in base for _ in range(4)]            # a GRPO-like call: 4 prompts x G = 4
    out = {"backend": jax.default_backend(), "devices": str(jax.devices())}
    ok = True
    # (label, sampler kwargs of the reference, of the path checked)
    variants = (("shared_prefill", dict(share_prefill=False), dict(share_prefill=True)),
                ("chunked_prefill", dict(prefill_tokens=0), dict(prefill_tokens=16 * 32)),
                ("memory_split", dict(), "budget"))
    for label, ref_kw, new_kw in variants:
        for name, sp in (("greedy", SamplingParams(temperature=0.0, max_new_tokens=48)),
                         ("sampled", SamplingParams(temperature=1.0, max_new_tokens=48))):
            make = lambda **kw: Sampler(SMOLLM2, None, max_len=1024, dtype=jnp.bfloat16,  # noqa: E731
                                        buckets=Buckets(), **kw)
            if new_kw == "budget":   # 60 % of the call's predicted bytes: two row chunks
                new_kw = dict(memory_budget=int(0.6 * make().call_bytes(prompts, sp)["total"]))
            a, b = (make(**kw).generate(params, prompts, sp, seed=3, step=5) for kw in (ref_kw, new_kw))
            # positions before a row's first differing token share their whole context, so
            # their logprobs must agree to bf16 rounding; after it the rows legitimately
            # diverge (random weights give near-ties that bf16 tiling differences can flip)
            eq = (a.tokens == b.tokens) & (a.mask > 0) & (b.mask > 0)
            prefix = np.cumprod(eq, axis=1).astype(bool)
            first = float(eq[:, 0].mean())
            dlp = float(np.abs(a.logprobs - b.logprobs)[prefix].mean()) if prefix.any() else 1.0
            key = f"{label}/{name}"
            out[f"{key}_first_token_agreement"] = first
            out[f"{key}_mean_common_prefix"] = float(prefix.sum(axis=1).mean())
            out[f"{key}_mean_abs_dlogp_on_common_prefix"] = dlp
            if label == "memory_split":
                out[f"{key}_splits"] = int(b.stats.get("splits", 1))
            ok &= first >= 0.9 and dlp < 2e-2
    s = Sampler(SMOLLM2, None, max_len=1024, dtype=jnp.bfloat16, buckets=Buckets())
    sp = SamplingParams(temperature=1.0, max_new_tokens=32)
    d = s.generate(params, base, sp, seed=3, step=5)
    k = s.generate(params, base, sp, seed=3, step=0, row_keys=[(5, r) for r in range(len(base))])
    out["row_keys_equal_default"] = bool(np.array_equal(d.tokens, k.tokens))
    ok &= out["row_keys_equal_default"]
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["ok"] = bool(ok)
    print(json.dumps(out), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
