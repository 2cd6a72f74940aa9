"""Skill1: one policy that selects, uses and distils skills (DESIGN.md §1.3).

``config.mode = "skill1"``; ``run(cfg, workdir)`` is the training loop:

    for step in steps:
        tasks  <- next tasks_per_step tasks of the stream
        eps    <- rollout(tasks x G): query -> retrieve -> rerank -> play -> r -> distil
        library.update(eps)              # EMA on all K retrieved; admit / merge / evict
        gens, A <- training_rows(eps)    # util GRPO, rerank REINFORCE(NDCG), distil GRPO
        engine.train(build_batch(gens, A))
        metrics, checkpoint (params, opt state, library snapshot, stream position)
    evaluate (frozen library, with and without retrieval); export library as SKILL.md; plot
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np

from skillax.methods.skill1.loop import run  # noqa: F401
