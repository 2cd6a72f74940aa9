"""The SFT warm-start stage for play policies (Skill1; SkillOS/Skill-α executors share it)."""

from __future__ import annotations

import numpy as np

from skillax.agents.envs import env_spec
from skillax.methods.common import tasks as task_lib
from skillax.methods.common.play import play_config
from skillax.methods.common.play_sft import play_demonstrations
from skillax.rl.data import make_iterator, sft_dataset
from skillax.tokenizers.chat import render_with_masks


def play_sft_warmstart(engine, cfg, train_tasks, play_cfg=None, episode_demo=None, pool=None,
                       skills_for=None, extra_transcripts=()) -> dict:
    """Expert play transcripts -> ``cfg.sft.steps`` SFT updates on ``engine``.

    ``train_tasks``: the first ``cfg.sft.n_tasks`` are replayed. ``play_cfg``: default
    ``methods.common.play.play_config(cfg)``.
    ``episode_demo``: optional per-episode transcript builder (see ``play_demonstrations``).
    ``pool``: optional ``EnvPool`` the expert replays run on in parallel (default: one env).
    ``skills_for``: optional ``task -> skill texts`` shown in that episode's play prompts.
    ``extra_transcripts``: more chat transcripts trained together with the play ones
    (Skill1: distil and query demonstrations).

    Returns a summary: demo stats, first/last NLL, tokens, seconds.
    """
    play_cfg = play_cfg or play_config(cfg)
    name = task_lib.resolve_env(cfg.env.name)
    tasks = list(train_tasks)[: int(cfg.sft.n_tasks)]
    demos, stats = play_demonstrations(tasks, env_spec(name, max_steps=int(cfg.env.max_steps)), play_cfg,
                                       max_steps=int(cfg.env.max_steps), episode_demo=episode_demo, pool=pool,
                                       skills_for=skills_for)
    if extra_transcripts:
        demos = demos + [list(m) for m in extra_transcripts]
        stats["extra_transcripts"] = len(extra_transcripts)
    if not demos:
        return {"skipped": "no expert demonstrations", **stats}
    tok = engine.tokenizer
    ds = sft_dataset([{"messages": m} for m in demos], lambda m: render_with_masks(tok, m),
                     batch_size=int(cfg.sft.batch_size), max_len=int(cfg.sft.max_len), seed=int(cfg.seed),
                     pad_id=int(tok.pad_token_id or 0), drop_remainder=False)
    it = make_iterator(ds)

    def batches():
        while True:
            b = next(it)
            b = {k: np.asarray(v) for k, v in b.items()}
            rows = b["tokens"].shape[0]
            want = -(-rows // int(cfg.train.micro_batch)) * int(cfg.train.micro_batch)
            if rows < want:  # pad the last partial batch with empty rows (zero loss mask)
                b = {k: np.concatenate([v, np.zeros((want - rows,) + v.shape[1:], v.dtype)]) for k, v in b.items()}
            yield b

    hist = engine.sft(batches(), lr=float(cfg.sft.lr), steps=int(cfg.sft.steps),
                      warmup_ratio=float(cfg.sft.warmup_ratio))
    # "steps" of the play stats are expert env steps, not SFT updates: named so in the summary
    stats = {("expert_env_steps" if k == "steps" else k): v for k, v in stats.items()}
    return {**stats, "transcripts": len(demos), "updates": len(hist), "nll_first": hist[0]["nll"],
            "nll_last": hist[-1]["nll"], "tokens_per_step": hist[-1]["tokens"],
            "seconds": sum(h["time_s"] for h in hist)}
