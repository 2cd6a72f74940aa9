"""Held-out evaluation during Skill1's RL (ours; ``eval.at_steps``): a held-out learning curve.

The end-of-run evaluation (``loop.evaluate_run``) sees the last checkpoint only. Campaign 15
(``benchmarks/results/learning/campaign_2026-12-04b``) found GRPO's held-out success 0.224 above
its warm start after 30 steps, while its play format changed at step 15 and its training success
showed no trend: one final evaluation could not tell when, or with what, the gain came. With
``eval.at_steps = "12"`` (or ``"10,20"``), right after each listed RL step the policy plays every
game of each evaluation split *without a library* (the play policy alone: the same condition for
GRPO, full and util-only arms, so their curves pair game by game), at the evaluation temperature,
and the records go to ``<workdir>/eval_steps/step_<k>/eval/without_library__<split>.jsonl`` (the
layout of ``eval_io.write_condition``, so ``benchmarks/learning`` reads them like a final eval).
The step's metrics line gets ``heldout/<split>`` (success rate) and ``time/heldout_s``. The time
counts against the RL deadline, not against the step's ``time/step_s``.
"""

from __future__ import annotations

import pathlib
import time

from skillax.methods.common import tasks as task_lib
from skillax.methods.common.eval_io import eval_splits, write_condition
from skillax.methods.skill1.evaluate import evaluate_condition

CONDITION = "without_library"


def at_steps(cfg) -> frozenset[int]:
    """The RL step indices of ``config.eval.at_steps`` ("" / () = none; "12" or "10,20" or a
    tuple of ints). Raises ValueError for a negative or non-integer entry, naming it."""
    raw = cfg.eval.get("at_steps", "") if cfg.get("eval") is not None else ""
    items = [x.strip() for x in raw.split(",") if x.strip()] if isinstance(raw, str) else list(raw)
    out = set()
    for x in items:
        try:
            k = int(x)
        except (TypeError, ValueError):
            raise ValueError(f"eval.at_steps entry {x!r} is not an RL step index (e.g. '12' or '10,20')") from None
        if k < 0 or str(k) != str(x).strip():
            raise ValueError(f"eval.at_steps entry {x!r} must be a non-negative integer RL step index")
        out.add(k)
    return frozenset(out)


def step_dir(workdir, step: int) -> pathlib.Path:
    """``<workdir>/eval_steps/step_<step>``: where :func:`evaluate_at_step` writes."""
    return pathlib.Path(workdir) / "eval_steps" / f"step_{int(step)}"


def evaluate_at_step(cfg, step: int, policy, library, index, pool, play_cfg, rollout_cfg, workdir) -> dict:
    """Play every game of each ``eval_splits(cfg)`` split once without a library (``rollout_cfg``:
    the loop's ``rollout_config(cfg, use_retrieval=False, distil="off")``; ``policy``: a sampler
    at ``eval.temperature``), write the records under :func:`step_dir`, and return the metrics
    ``{"heldout/<split>": success in [0, 1], "time/heldout_s": seconds}``. ``eval.n_tasks`` (0 =
    every game) bounds the games as in the final evaluation; < 0 evaluates nothing (``{}``)."""
    n = int(cfg.eval.n_tasks)
    if n < 0:
        return {}
    if rollout_cfg.use_retrieval:
        raise ValueError("evaluate_at_step plays without a library: pass rollout_config(cfg, use_retrieval=False)")
    t0 = time.perf_counter()
    out: dict = {}
    for split in eval_splits(cfg):
        tasks = task_lib.load_tasks(cfg.env, split, n or None)
        records = evaluate_condition(tasks, policy, library, index, pool, play_cfg, rollout_cfg,
                                     batch_size=int(cfg.eval.get("batch_size", 0)))
        summary = write_condition(step_dir(workdir, step), CONDITION, split, records)
        out[f"heldout/{split}"] = float(summary["success"])
        print(f"held-out after RL step {step}, {CONDITION} {split}: {summary['successes']}/{summary['n']} won")
    out["time/heldout_s"] = time.perf_counter() - t0
    return out
