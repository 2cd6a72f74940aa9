"""Skill-alpha on reasoning tasks: evidence = solved / failed reasoning-gym traces of the worker.

Command (accelerator; CPU works at a few steps):
    python -m skillax.main --config configs/skill_alpha_reasoning.py --workdir runs/skill_alpha_reasoning

Evidence: the frozen worker's answers to 8 reasoning-gym training items per topic
(arithmetic, number theory, counting, sorting; generator seeds from the split name), each
serialised with its score and the reference answer, 4 per chunk, grouped by topic.
Anchored query: another training item of the same topic; verifier: the generator's own
scorer (binary). Held-out: the same generators' "test" split, z_T vs no skill.

Should show: metrics.jsonl per step (reward/mean, action mix, valid_rate, r_ctrl);
results.json with the inference histogram and eval {with_skill, no_skill, delta}.
"""

from skillax.methods.skill_alpha.config import skill_alpha


def get_config():
    c = skill_alpha("reasoning")
    c.model.path = "smollm2"
    c.model.max_len = 4096
    c.steps = 20
    c.lanes = 4
    c.unit.max_new_tokens = 512
    c.unit.anchors_k = 2
    c.evidence.max_prompt_tokens = 3584
    c.evidence.n_evidence_per_family = 8
    c.evidence.n_anchor_per_family = 12
    c.worker.max_tokens = 256
    c.eval.n_tasks = 48
    c.train.length_buckets = (1024, 2048, 3072, 4096)
    return c
