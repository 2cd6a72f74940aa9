"""Chat with a policy: load it, apply its chat template, decode, print the text.

Command (README command 1 until the methods exist; ~1 min on a 2-core CPU):
    python -m skillax.main --config configs/generate.py
    python -m skillax.main --config configs/generate.py --config.prompt="Name three fruits." \
        --config.temperature=0.7 --config.output=json
    python -m skillax.main --config configs/generate.py --config.mode=info

Should show: a short, sensible SmolLM2-135M-Instruct answer to the prompt (greedy by default).
With --config.output=json one line {"prompt_ids": [...], "output_ids": [...], "text": ...}.
"""

from skillax import config_defaults


def get_config():
    c = config_defaults.base("generate")
    c.model.path = "smollm2"
    c.model.max_len = 1024
    c.prompt = "What is the capital of France? Answer in one sentence."
    c.system = ""
    c.max_new_tokens = 64
    c.temperature = 0.0  # 0 = greedy
    c.top_p = 1.0
    c.top_k = 0
    c.output = "text"  # "text" | "json"
    return c
