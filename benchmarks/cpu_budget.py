"""CPU budget of the embedded default (SmolLM2-135M shape, random weights): what one Skill1
step costs on a 2-core machine. Times the sampler (prefill + decode) and the RL train step
at the default's shapes, bf16 and fp32, and prints JSON lines (benchmarks/results/cpu_budget.jsonl).

    taskset -c 0,1 env JAX_PLATFORMS=cpu python benchmarks/cpu_budget.py [--rows 32 --seq 512]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import record  # noqa: E402
from skillax.engine import Sampler, SamplingParams  # noqa: E402
from skillax.models.config import ModelConfig  # noqa: E402
from skillax.models.params import init_params  # noqa: E402
from skillax.rl import optim  # noqa: E402
from skillax.rl.objectives import ObjectiveConfig  # noqa: E402
from skillax.rl.train_step import TrainConfig, make_train_step  # noqa: E402

SMOLLM2 = ModelConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_layers=30, num_heads=9,
                      num_kv_heads=3, head_dim=64, tie_word_embeddings=True, qk_norm=False, rope_theta=1e5,
                      rms_norm_eps=1e-5, architecture="LlamaForCausalLM")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=380)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--dtypes", default="bfloat16,float32")
    a = ap.parse_args()
    params = init_params(SMOLLM2, jax.random.key(0), jnp.float32)
    rng = np.random.default_rng(0)
    for dt_name in a.dtypes.split(","):
        dt = jnp.dtype(dt_name)
        p = jax.tree.map(lambda x: x.astype(dt), params)
        s = Sampler(SMOLLM2, None, max_len=1024, dtype=dt)
        prompts = [rng.integers(10, 40000, a.prompt).tolist() for _ in range(a.batch)]
        sp = SamplingParams(temperature=1.0, max_new_tokens=a.new, eos_ids=(49151,))
        t = time.perf_counter(); s.generate(p, prompts, sp, seed=0, step=0); t_first = time.perf_counter() - t
        t = time.perf_counter(); out = s.generate(p, prompts, sp, seed=0, step=1); t_gen = time.perf_counter() - t
        shape = dict(model="smollm2-135m", batch=a.batch, prompt=a.prompt, new=a.new, dtype=dt_name)
        record("cpu_budget", "sample_call_s", shape, t_gen, None, "s", None, None, first_call_s=t_first,
               steps=out.stats.get("steps"))
        opt = optim.make_optimizer(1e-5, 10)
        fresh = jax.tree.map(jnp.copy, params)  # the step donates its state
        state = {"params": fresh, "opt_state": opt.init(fresh), "step": jnp.zeros((), jnp.int32)}
        B, T = a.rows, a.seq
        tcfg = TrainConfig(objectives=(("util", ObjectiveConfig()),), num_micro_batches=B // a.micro,
                           compute_dtype=dt_name, remat=True, chunk_size=256)
        step = make_train_step(SMOLLM2, opt, tcfg)
        batch = {"tokens": rng.integers(0, 40000, (B, T)).astype(np.int32),
                 "positions": np.tile(np.arange(T, dtype=np.int32), (B, 1)), "valid": np.ones((B, T), bool),
                 "old_logprobs": np.full((B, T), -3.0, np.float32),
                 "objectives": {"util": {"loss_mask": np.pad(np.ones((B, T - 1), np.float32), ((0, 0), (1, 0))),
                                         "advantages": np.ones((B,), np.float32)}}}
        t = time.perf_counter(); state, m = step(state, batch); jax.block_until_ready(m); t_first = time.perf_counter() - t
        t = time.perf_counter(); state, m = step(state, batch); jax.block_until_ready(m); t_step = time.perf_counter() - t
        record("cpu_budget", "train_step_s", dict(model="smollm2-135m", rows=B, seq=T, micro=a.micro, dtype=dt_name),
               t_step, None, "s", None, None, first_call_s=t_first)


if __name__ == "__main__":
    main()
