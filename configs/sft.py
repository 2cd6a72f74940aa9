"""SFT from a JSONL of chat transcripts (assistant-only loss).

Command:
    python -m skillax.main --config configs/sft.py --config.sft.data=transcripts.jsonl \
        --workdir runs/sft [--config.model.path=/ckpt/Qwen3-0.6B --config.export_dir=runs/sft/hf]

Should show: the per-token NLL on assistant tokens falling over the steps (metrics.jsonl);
paper settings (Skill-alpha warm start): 3 epochs, lr 5e-6, warmup 0.05, cosine.

Re-running the command on the same --workdir after the SFT finished (e.g. it died in the
export, or to export again with another export_dir) restores the SFT checkpoint instead of
training again; other sft.* / model / seed settings are refused (skillax/modes/sft.py).
"""

from skillax import config_defaults


def get_config():
    c = config_defaults.base("sft")
    c.model.path = "smollm2"
    c.model.dtype = "bfloat16"
    c.train = config_defaults.train(lr=5e-6, total_steps=100)
    c.rl = config_defaults.rl()
    c.sft = config_defaults.sft(steps=100, lr=5e-6)
    c.sft.data = ""
    c.export_dir = ""
    return c
