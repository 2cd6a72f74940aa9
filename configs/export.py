"""Export a run's trained policy as a Hugging Face checkpoint (``mode=export``,
skillax.modes.export).

Command (CPU; ``model.path`` must be the run's base model):
    python -m skillax.main --config configs/export.py --workdir runs/default \
        --config.export.dir=exported/default [--config.export.dtype=bfloat16]

Should show: one JSON line ``{"dir": ..., "step": <checkpoint step>, "files": [config.json,
generation_config.json, model.safetensors, tokenizer files]}``; the folder reloads with
``transformers.AutoModelForCausalLM.from_pretrained``.
"""
import ml_collections

from skillax import config_defaults


def get_config():
    c = config_defaults.base("export")
    c.model.path = "smollm2"
    c.export = ml_collections.ConfigDict(dict(dir="", dtype="float32"))
    return c
