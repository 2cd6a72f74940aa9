"""``mode=sft``: supervised fine-tuning from a JSONL of chat transcripts.

Each line is ``{"messages": [{"role": ..., "content": ...}, ...]}``; the loss is next-token
NLL on assistant tokens only (masks from ``tokenizers.chat.render_with_masks``: multi-turn
transcripts train every assistant turn and nothing else). Writes checkpoints (orbax) and
``metrics.jsonl``; ``--config.export_dir`` also writes an HF folder that transformers loads.
"""

from __future__ import annotations

import pathlib

import numpy as np

from skillax.methods.common.engine import PolicyEngine
from skillax.rl.data import make_iterator, sft_dataset
from skillax.rl.metrics import MetricsWriter
from skillax.tokenizers.chat import render_with_masks


def run(cfg, workdir=None):
    workdir = pathlib.Path(workdir or "runs/sft")
    if not cfg.sft.data:
        raise ValueError("mode=sft needs --config.sft.data=/path/to/transcripts.jsonl")
    engine = PolicyEngine.create(cfg, workdir)
    tok = engine.tokenizer
    ds = sft_dataset(str(cfg.sft.data), lambda m: render_with_masks(tok, m), batch_size=int(cfg.sft.batch_size),
                     max_len=int(cfg.sft.max_len), seed=int(cfg.seed), pad_id=int(tok.pad_token_id or 0))
    it = make_iterator(ds)
    batches = ({k: np.asarray(v) for k, v in next(it).items()} for _ in iter(int, 1))
    hist = engine.sft(batches, lr=float(cfg.sft.lr), steps=int(cfg.sft.steps),
                      warmup_ratio=float(cfg.sft.warmup_ratio))
    with MetricsWriter(workdir / "metrics.jsonl", total_steps=len(hist)) as w:
        for i, m in enumerate(hist):
            w.write(i, m)
    engine.save(len(hist) - 1, {"mode": "sft"})
    if cfg.get("export_dir"):
        from skillax.models.hf_io import export_hf_checkpoint

        export_hf_checkpoint(engine.state["params"], engine.model_cfg, cfg.export_dir, tokenizer=tok)
    engine.close()
    print(f"sft: {len(hist)} steps, nll {hist[0]['nll']:.3f} -> {hist[-1]['nll']:.3f}")
    return hist
