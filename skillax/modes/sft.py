"""``mode=sft``: supervised fine-tuning from a JSONL of chat transcripts.

Each line is ``{"messages": [{"role": ..., "content": ...}, ...]}``; the loss is next-token
NLL on assistant tokens only (masks from ``tokenizers.chat.render_with_masks``: multi-turn
transcripts train every assistant turn and nothing else). Writes checkpoints (orbax) and
``metrics.jsonl``; ``--config.export_dir`` also writes an HF folder that transformers loads.

Restart (issue 23, item 5, as the methods' SFT warm start): the run's one checkpoint is its
SFT result, written when the SFT ends, before ``metrics.jsonl`` and the export; its host
payload holds ``{"mode": "sft", "sft_steps", "history"}`` (the per-step metrics). Started again
on the same workdir, a run finds it, restores it and does not repeat the SFT: it rewrites
``metrics.jsonl`` from the history when that file is incomplete and does the export (e.g. a
run that died in the export, or a new ``export_dir``). The workdir's ``config.json``
(``methods.common.run_dir``) guards it: a restart whose ``sft.*``, model or seed differ is
refused (ConfigChangedError; ``allow_config_change=True`` keeps the checkpoint anyway), a new
``export_dir`` is allowed. This is the methods' ``<workdir>/warmstart/`` for this mode: the
checkpoint already is the SFT result, so a second copy is not written. A run that dies during
the SFT has no checkpoint and starts the SFT again (no mid-SFT checkpoints).
"""

from __future__ import annotations

import pathlib

import numpy as np

from skillax.methods.common import run_dir
from skillax.methods.common.engine import PolicyEngine
from skillax.rl.data import make_iterator, sft_dataset
from skillax.rl.metrics import MetricsWriter, read_jsonl
from skillax.tokenizers.chat import render_with_masks

# config keys: the SFT's are what this mode means (methods may change them on resume: their
# SFT is over by then); where the HF folder goes is only an output
FIXED, FREE = ("sft.",), ("export_dir",)


def run(cfg, workdir=None):
    workdir = pathlib.Path(workdir or "runs/sft")
    if not cfg.sft.data:
        raise ValueError("mode=sft needs --config.sft.data=/path/to/transcripts.jsonl")
    if int(cfg.sft.steps) < 1:
        raise ValueError(f"mode=sft needs sft.steps >= 1, got {cfg.sft.steps}")
    run_dir.prepare(cfg, workdir, fixed=FIXED, free=FREE)   # a restart of another SFT fails here
    engine = PolicyEngine.create(cfg, workdir)
    tok = engine.tokenizer
    hist = _restored_history(engine)
    if hist is None:
        ds = sft_dataset(str(cfg.sft.data), lambda m: render_with_masks(tok, m), batch_size=int(cfg.sft.batch_size),
                         max_len=int(cfg.sft.max_len), seed=int(cfg.seed), pad_id=int(tok.pad_token_id or 0))
        it = make_iterator(ds)
        batches = ({k: np.asarray(v) for k, v in next(it).items()} for _ in iter(int, 1))
        hist = engine.sft(batches, lr=float(cfg.sft.lr), steps=int(cfg.sft.steps),
                          warmup_ratio=float(cfg.sft.warmup_ratio))
        engine.save(len(hist) - 1, {"mode": "sft", "sft_steps": len(hist), "history": hist})
        engine.checkpointer.wait()
    else:
        print(f"sft: the completed SFT of {workdir} restored ({len(hist)} steps); not repeated")
    if _logged_steps(workdir / "metrics.jsonl") != list(range(len(hist))):
        with MetricsWriter(workdir / "metrics.jsonl", total_steps=len(hist)) as w:
            for i, m in enumerate(hist):
                w.write(i, m)
    if cfg.get("export_dir"):
        from skillax.models.hf_io import export_hf_checkpoint

        export_hf_checkpoint(engine.state["params"], engine.model_cfg, cfg.export_dir, tokenizer=tok)
    engine.close()
    print(f"sft: {len(hist)} steps, nll {hist[0]['nll']:.3f} -> {hist[-1]['nll']:.3f}")
    return hist


def _restored_history(engine) -> list[dict] | None:
    """The per-step SFT metrics of the workdir's completed SFT checkpoint, restored into
    ``engine``; None when the workdir has no checkpoint. Raises ValueError for a checkpoint of
    another mode (a method's run in this workdir)."""
    if not engine.has_checkpoint():
        return None
    _, host, _ = engine.restore()
    host = host or {}
    if host.get("mode") != "sft":
        raise ValueError(f"{engine.workdir / 'checkpoints'} holds a checkpoint of mode="
                         f"{host.get('mode')!r}, not of a mode=sft run; use another --workdir")
    if isinstance(host.get("history"), list):
        return [dict(m) for m in host["history"]]
    # written before the history was kept in the checkpoint: its metrics.jsonl has it
    reserved = ("step", "time", "elapsed")
    path = engine.workdir / "metrics.jsonl"
    hist = [{k: v for k, v in r.items() if k not in reserved} for r in read_jsonl(path)] if path.is_file() else []
    if not hist:
        raise ValueError(f"{engine.workdir / 'checkpoints'} holds a mode=sft checkpoint without its SFT "
                         f"history (and {path} has none); use another --workdir")
    return hist


def _logged_steps(path: pathlib.Path) -> list[int]:
    """The steps ``metrics.jsonl`` holds, in file order ([] when missing or unreadable: it is
    rewritten from the checkpoint's history then)."""
    try:
        return [int(r["step"]) for r in read_jsonl(path)]
    except (OSError, ValueError, KeyError, TypeError):
        return []
