"""SkillOS in the single-turn reasoning setting (SkillOS paper §4: AIME24/25 + GPQA; here AIME
and reasoning-gym): train on reasoning-gym task groups (grouped by topic, then generator),
evaluate on AIME 2024/2025 groups (../shared/data/aime).

Command:
    python -m skillax.main --config configs/skillos_reasoning.py --workdir runs/skillos_reasoning \
        --config.model.path=/path/to/Qwen3-8B \
        --config.executor.kind=openai --config.executor.openai.model=... --config.executor.openai.base_url=...
Small CPU check: --config.steps=1 --config.groups_per_step=1 --config.group_size=2
    --config.env.rg_datasets=gcd,lcm --config.env.rg_per_dataset=3 --config.eval.conditions=none
    --config.reward.cnt=0

The executor answers in one turn (<action>final answer</action>, \\boxed{} accepted inside);
reward 1 iff the generator's scorer (or math-verify for AIME) gives full credit.
Content judge for r_cnt: the frozen local policy by default; the paper's Qwen3-32B with
--config.judge.kind=openai --config.judge.openai.model=... --config.judge.openai.base_url=...;
--config.reward.cnt=0 runs the paper's "w/o r_cnt" ablation.
Should show (paper, Gemini-2.5-Pro executor): AIME24/25 + GPQA mean 81.8 -> 88.6; smaller gains
than the agentic settings (reusable knowledge is more abstract).
"""

from skillax.methods.skillos.config import skillos


def get_config():
    c = skillos(env_name="reasoning")
    c.model.path = "smollm2"
    c.model.max_len = 8192
    # rows up to model.max_len must fit a bucket (config_check.check_buckets): 6144, 8192 added
    c.train.length_buckets = tuple(c.train.length_buckets) + (6144, 8192)
    c.env.train_split = "train"
    c.env.eval_split = "aime"
    c.env.max_steps = 1
    c.env.rg_per_dataset = 16
    c.tasks_per_group = 4
    c.executor.action_tokens = 2048
    c.play.history_k = 0
    c.play.require_think = False
    c.play.max_obs_chars = 4000
    c.play.max_action_chars = 200
    c.eval.n_groups = 15
    c.sft.steps = 0               # no expert trajectories for free-form answers
    c.judge.kind = "policy"       # r_cnt judge: the frozen local policy (paper: Qwen3-32B, judge.kind=openai)
    return c
