"""The main job on the embedded default: Skill1 with SmolLM2-135M-Instruct on real games.

Command (README command 1; CPU, 2 cores; 7.3 min after install, 9.7 min with it, 2026-11-30):
    python -m skillax.main --config configs/default.py --workdir runs/default

What it runs: an SFT warm start on expert play transcripts (TextWorld walkthroughs, or the
ALFWorld planner when ../shared is present), then 2 Skill1 RL steps of 1 task x 2 rollouts (one GRPO group)
(query -> MiniLM retrieval -> rerank -> play -> distil), the library updated after every
step, a held-out evaluation with and without the library, and the outputs:
runs/default/{metrics.jsonl, metrics.png, eval.json, checkpoints/, skills/<name>/SKILL.md}.

Should show: a metrics line per step (success_rate, rerank_ndcg, library_size, util/loss,
time split); with a 135M model on CPU a few steps cannot show learning — this run proves the
whole loop on real weights and real games. See configs/skill1_alfworld.py for paper settings.
"""

from skillax import config_defaults


def get_config():
    c = config_defaults.skill1(env_name="textworld")
    c.model.path = "smollm2"
    c.model.dtype = "bfloat16"
    c.model.max_len = 1024
    c.steps = 2
    c.tasks_per_step = 1          # 2 tasks per step took the run to 11.2 min (2026-11-30)
    c.group_size = 2
    c.checkpoint_every = 1
    c.env.max_steps = 2
    c.env.tw_games_per_family = 2
    c.rollout.top_k = 5
    c.rollout.query_tokens = 16
    c.rollout.rank_tokens = 12
    c.rollout.action_tokens = 32
    c.rollout.distil_tokens = 48
    c.play.max_admissible = 8
    c.play.max_obs_chars = 200
    c.play.max_skill_chars = 200
    c.train.lr = 1e-5
    c.train.total_steps = 2
    c.train.micro_batch = 8
    c.train.length_buckets = (128, 192, 256, 320, 384, 512, 768, 1024)
    c.sft.steps = 2
    c.sft.lr = 5e-5
    c.sft.batch_size = 8
    c.sft.max_len = 384
    c.sft.n_tasks = 8
    c.eval.n_tasks = 2
    return c
