"""Skill-alpha document-to-skill on the TextWorld game documentation (DESIGN.md §1.1).

Command (accelerator; CPU works at a few steps):
    python -m skillax.main --config configs/skill_alpha_document.py --workdir runs/skill_alpha_document
    # a real judge (recommended; the paper grades CL-Bench with GPT-5.5):
    #   --config.judge.kind=openai --config.judge.openai.model=gpt-4o [--config.judge.openai.base_url=...]
    # your own document: --config.document.path=manual.md --config.document.questions=q.jsonl

Evidence: the documentation shipped in the installed ``textworld`` package -- the in-game
help (one paragraph per command) and the Cooking / Coin Collector / Treasure Hunter / Simple
challenge descriptions and settings notes -- in chunks of 4 paragraphs
(``skillax.methods.skill_alpha.documents``). Anchored queries: 10 train questions over that
text, each with rubrics; verifier: the all-or-nothing rubric judge (by default the frozen
worker itself grades -- weak at 135M). Held-out: 6 eval questions, z_T vs no skill.

Should show: metrics.jsonl per step (reward/mean, action mix, valid_rate, r_ctrl);
results.json with the inference histogram and eval {with_skill, no_skill, delta}.
"""

from skillax.methods.skill_alpha.config import skill_alpha


def get_config():
    c = skill_alpha("document")
    c.model.path = "smollm2"
    c.model.max_len = 4096
    c.steps = 20
    c.lanes = 4
    c.unit.max_new_tokens = 512
    c.evidence.max_prompt_tokens = 3584
    c.worker.max_tokens = 128
    c.judge.max_tokens = 256
    c.eval.repeats = 2
    c.train.length_buckets = (1024, 2048, 3072, 4096)
    return c
