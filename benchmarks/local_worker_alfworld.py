"""The frozen local worker (SmolLM2-135M-Instruct through the sampler) plays ALFWorld on CPU.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/local_worker_alfworld.py [--episodes 10]
        [--split valid_seen] [--max-steps 50] [--dtype float32]

Episodes are played in lock-step (one batched ``LocalWorker.chat`` call per game step) with
the Skill1/SkillOS play prompt (``agents.agent_loop``), no skills injected, temperature 0.4
(the papers' evaluation temperature). Prints and appends to
``benchmarks/results/local_worker_alfworld.jsonl``: success rate, mean steps, invalid-action
rate, prompt/completion tokens, seconds (sampling vs total). Needs ../shared/data/alfworld.
No reference figure: this is an end-to-end check of issue 6, not a speed benchmark.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax.numpy as jnp  # noqa: E402

from benchmarks.common import record  # noqa: E402
from skillax.agents.agent_loop import PlayConfig, play_episodes  # noqa: E402
from skillax.agents.envs import env_spec  # noqa: E402
from skillax.agents.envs.alfworld import load_alfworld_tasks  # noqa: E402
from skillax.agents.envs.runner import EnvPool  # noqa: E402
from skillax.agents.workers.local import LocalWorker  # noqa: E402
from skillax.engine import Sampler  # noqa: E402
from skillax.engine.sampler import make_generate_fn  # noqa: E402
from skillax.models.registry import load_policy  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--split", default="valid_seen")
    ap.add_argument("--max-steps", type=int, default=50)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.4)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)

    t_all = time.perf_counter()
    params, cfg, tok = load_policy("smollm2", param_dtype=args.dtype)
    sampler = Sampler(cfg, tok, max_len=2048, dtype=jnp.dtype(args.dtype))
    worker = LocalWorker(tok, make_generate_fn(sampler, params, seed=0))
    tasks = load_alfworld_tasks(None, splits=[args.split])
    step = max(1, len(tasks) // args.episodes)
    tasks = tasks[::step][: args.episodes]  # spread over the split's task types
    play = PlayConfig(history_k=2, max_admissible=40)
    seconds = {"sampling": 0.0}

    def generate(prompts):
        t = time.perf_counter()
        out = worker.chat(prompts, temperature=args.temperature, max_tokens=args.max_tokens,
                          stop=["</action>"])
        seconds["sampling"] += time.perf_counter() - t
        seconds["calls"] = seconds.get("calls", 0) + 1
        print(f"game step {seconds['calls']}: {len(prompts)} live episodes, "
              f"{time.perf_counter() - t:.1f} s", flush=True)
        return [c.text + ("</action>" if c.finish_reason == "stop" else "") for c in out]

    pool = EnvPool(env_spec("alfworld", max_steps=args.max_steps), n_workers=args.workers)
    try:
        trajs = play_episodes(pool, tasks, generate, cfg=play, max_steps=args.max_steps)
    finally:
        pool.close()
    steps = [len(t.steps) for t in trajs]
    invalid = sum(sum(1 for s in t.steps if not s.valid) for t in trajs)
    wins = [bool(t.won) for t in trajs]
    shape = dict(model="smollm2-135m", episodes=len(trajs), split=args.split, max_steps=args.max_steps,
                 dtype=args.dtype, temperature=args.temperature)
    record("local_worker_alfworld", "alfworld_success", shape, sum(wins) / len(wins), None, "success rate",
           None, None, mean_steps=sum(steps) / len(steps), invalid_action_rate=invalid / max(sum(steps), 1),
           prompt_tokens=worker.usage.prompt_tokens, completion_tokens=worker.usage.completion_tokens,
           sampling_s=round(seconds["sampling"], 1), total_s=round(time.perf_counter() - t_all, 1),
           task_types=sorted({t.family for t in tasks}), won=[t.id for t, w in zip(tasks, wins) if w])


if __name__ == "__main__":
    main()
