"""``mode=export``: a run's trained policy as a Hugging Face checkpoint (issue 23 item 8).

    python -m skillax.main --config configs/export.py --workdir runs/skill1 \
        --config.export.dir=exported/skill1 [--config.export.dtype=bfloat16]

Reads the latest checkpoint of ``--workdir`` (a run folder or its ``checkpoints/``; the
policy params of ``methods.common.engine.PolicyEngine``'s state, shapes checked against
``model.path``, which must be the run's base model: ``modes.serve.restore_policy_params``),
and writes ``<export.dir>/{config.json, model.safetensors, generation_config.json}`` plus the
base model's tokenizer files (``models.hf_io.export_hf_checkpoint``), so that
``transformers.AutoModelForCausalLM.from_pretrained(dir)`` reloads the trained policy and
greedy decoding gives our sampler's text (``tests/test_mode_export.py``).
``generation_config.json`` carries the config's bos / eos ids and the run's evaluation
temperature when the run's ``config.json`` has one (else greedy).
"""
from __future__ import annotations

import json
import pathlib

from skillax.models.registry import load_policy


def generation_config(mcfg, run_cfg: dict | None = None) -> dict:
    """The ``generation_config.json`` dict: bos/eos ids of ``mcfg``; ``do_sample`` and
    ``temperature`` from the run's ``eval.temperature`` (> 0: sampled at it; absent or 0:
    greedy)."""
    out: dict = {"_from_model_config": False}
    if mcfg.bos_token_id is not None:
        out["bos_token_id"] = int(mcfg.bos_token_id)
    if mcfg.eos_token_id:
        eos = [int(e) for e in mcfg.eos_token_id]
        out["eos_token_id"] = eos[0] if len(eos) == 1 else eos
    t = float(((run_cfg or {}).get("eval") or {}).get("temperature", 0.0) or 0.0)
    out.update({"do_sample": True, "temperature": t} if t > 0 else {"do_sample": False})
    return out


def run(cfg, workdir=None):
    """Export the latest policy params under ``workdir`` (module docstring). Returns a dict
    (dir, step, files). Raises ValueError without ``--workdir`` / ``export.dir``, and the
    errors of ``restore_policy_params`` (no checkpoint, another model)."""
    from skillax.models.hf_io import export_hf_checkpoint
    from skillax.modes.serve import restore_policy_params

    if not workdir:
        raise ValueError("mode=export needs --workdir: the run whose latest checkpoint is exported")
    out_dir = str(cfg.export.get("dir", "") or "")
    if not out_dir:
        raise ValueError("mode=export needs --config.export.dir: the folder to write the HF checkpoint to")
    dtype = str(cfg.export.get("dtype", "float32"))
    if dtype not in ("float32", "bfloat16"):
        raise ValueError(f"export.dtype must be 'float32' or 'bfloat16', got {dtype!r}")
    _, mcfg, tokenizer = load_policy(cfg.model.path, "float32", seed=int(cfg.seed))
    params, step = restore_policy_params(workdir, mcfg)
    run_cfg_file = pathlib.Path(workdir) / "config.json"
    run_cfg = json.loads(run_cfg_file.read_text()) if run_cfg_file.exists() else None
    path = export_hf_checkpoint(params, mcfg, out_dir, dtype=dtype,
                               tokenizer=tokenizer if hasattr(tokenizer, "save_pretrained") else None)
    (path / "generation_config.json").write_text(json.dumps(generation_config(mcfg, run_cfg), indent=2))
    info = {"dir": str(path), "step": int(step), "dtype": dtype, "files": sorted(p.name for p in path.iterdir())}
    print(json.dumps(info))
    return info
