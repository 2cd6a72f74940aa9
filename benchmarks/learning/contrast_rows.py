"""What ``sft.play_contrast`` changes in the SkillOS executor's play-SFT data (campaign 6's lever).

Runs the real data path (:func:`skillax.methods.skillos.executor_sft.search_transcripts`:
planner records from the cache, the searching expert on real ALFWorld games, rows counted with
the Qwen2.5-Coder-0.5B tokenizer) on N valid_train games spread over the task types, once with
one random skill context per game (campaign 5's recipe: fraction 0.7, relevant share 0.7) and
once with the three contexts per game, and prints one JSON line per mode: episodes with their
own type's skill, transcripts, mean steps with / without the own skill, longest row,
seconds. No model, CPU only; games whose planner record is not cached are skipped (counted).

    SKILLAX_CACHE=... python benchmarks/learning/contrast_rows.py [N_GAMES] [OUT.jsonl]
"""
from __future__ import annotations

import json
import os
import sys
import time

import ml_collections

from skillax.agents.envs import env_spec
from skillax.agents.envs.alfworld import load_alfworld_tasks
from skillax.agents.envs.experts import _cache_path
from skillax.agents.envs.runner import EnvPool
from skillax.configs import get as get_config
from skillax.methods.skillos import executor_sft
from skillax.methods.skillos.train import play_config, spread
from skillax.tokenizers.loader import load_tokenizer
from skillax.tokenizers.chat import render_with_masks


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else 36
    cfg: ml_collections.ConfigDict = get_config("skillos_alfworld_learning")
    tasks = load_alfworld_tasks(splits=["valid_train"])
    cached = [t for t in tasks if os.path.exists(_cache_path(t, "planner-wheel", None))]
    games = spread(cached, min(n, len(cached)))
    tok = load_tokenizer("qwen2.5-coder-0.5b")
    count = lambda m: len(render_with_masks(tok, m)[0])  # noqa: E731
    pc = play_config(cfg)
    lines = []
    with EnvPool(env_spec("alfworld", max_steps=int(cfg.env.max_steps)), 2) as pool:
        for contrast in (False, True):
            t0 = time.perf_counter()
            rows, st = executor_sft.search_transcripts(
                games, pool, pc, int(cfg.env.max_steps), 0.7, 0.7, 8, 0, count, int(cfg.sft.play_max_len),
                contrast=contrast)
            line = {"mode": "contrast" if contrast else "one draw (campaign 5)", "games": len(games),
                    "uncached_skipped": len(tasks) - len(cached), "transcripts": len(rows),
                    "episodes_with_own_skill": st["episodes_with_own_skill"],
                    "episodes_with_skills": st["episodes_with_skills"], "won": st["won"],
                    "truncated": st["truncated"], "mean_steps_with_own_skill": round(st["mean_steps_with_own_skill"], 2),
                    "mean_steps_without": round(st["mean_steps_without"], 2), "max_tokens": st["max_tokens"],
                    "seconds": round(time.perf_counter() - t0, 1),
                    "command": "python benchmarks/learning/contrast_rows.py " + " ".join(argv)}
            print(json.dumps(line), flush=True)
            lines.append(line)
    if len(argv) > 1:
        with open(argv[1], "a") as f:
            f.writelines(json.dumps(x) + "\n" for x in lines)


if __name__ == "__main__":
    main(sys.argv[1:])
