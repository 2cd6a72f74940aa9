"""The main job on the embedded default: Skill1 with SmolLM2-135M-Instruct on real games.

Command (README command 1; CPU, 2 cores; from a fresh clone 178 s in all with pip's cache and
the TextWorld games cached, 2026-12-01; 528 s = setup.sh 110 s + the run 418 s with an empty
SKILLAX_CACHE, 2026-11-30):
    python -m skillax.main --config configs/default.py --workdir runs/default

What it runs: TextWorld games whose walkthrough is one action (``env.tw_families =
"one_step"``: treasure hunter / coin collector level 1 -- take the object named in the
objective, which lies in the start room among 4-8 admissible commands), 2 steps allowed per
episode. An SFT warm start (3 steps) on the expert play transcripts of the 8 training games
plus one distil demonstration per game (the JSON the distil stage must write); then 2 Skill1
RL steps of 1 task x 2 rollouts (one GRPO group) at temperature 0.6 (query -> MiniLM
retrieval -> rerank -> play -> distil), the library updated after every step (a skill is
admitted only from a won episode with a valid, non-trivial distil JSON), a held-out
evaluation (2 test games, temperature 0.4) with and without the library, and the outputs:
runs/default/{metrics.jsonl, metrics.png, eval.json, checkpoints/, skills/<name>/SKILL.md}.

Should show: a metrics line per step (success_rate, admissions, library_size, rerank_ndcg,
util/loss, time split) with episodes won and distilled skills admitted: measured success_rate
1.0, 1.0 (seed 0, 2026-12-01; library 2 skills; 1.0 then 0.5 on 2026-11-30), eval success 1.0
with and without the library, and skills/<name>/SKILL.md named from the task (e.g.
skills/get-ready-pick-stuff-up-put/, through the Agent Skills export gate) with its
lesson ("Action lesson: take latchkey / Navigation lesson: no navigation needed"). These are the
easiest games TextWorld makes and a 135M model gets two CPU steps, so the run shows no learning:
it proves the whole loop (play, distil, admission, export) on real weights and real games. See
configs/skill1_alfworld.py for paper settings.
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
    # rollouts at 0.6, scored by the trainer at the same temperature: after the 3-step SFT,
    # SmolLM2 wrote a valid, correct first action in 9/24 samples at 1.0 and 17/24 at 0.6, and
    # an admissible distil JSON in 2/8 at 1.0 and 7/8 at 0.6 (paper: 1.0; eval stays at 0.4)
    c.temperature = 0.6
    c.rl.temperature = 0.6
    c.env.max_steps = 2           # one-action games: one step to spare
    c.env.tw_families = "one_step"  # textworld_env.ONE_STEP_FAMILIES: take the object in the room
    c.env.tw_games_per_family = 4
    c.rollout.top_k = 5
    c.rollout.query_tokens = 16
    c.rollout.rank_tokens = 12
    c.rollout.action_tokens = 32
    c.rollout.distil_tokens = 128  # the SFT-taught distil JSON of these games is 78-96 tokens
    c.play.max_admissible = 8
    c.play.max_obs_chars = 200
    c.play.max_skill_chars = 200
    c.train.lr = 1e-5
    c.train.total_steps = 2
    c.train.micro_batch = 8
    c.train.length_buckets = (128, 192, 256, 320, 384, 512, 768, 1024)
    c.sft.steps = 3               # 2 steps at 5e-5 left SmolLM2 writing no valid action at all
    c.sft.lr = 3e-4
    c.sft.batch_size = 8
    c.sft.max_len = 288           # the longest transcript of these games is 278 tokens
    c.sft.n_tasks = 8
    c.sft.distil_demos = True     # without them SmolLM2 never writes parsable distil JSON
    c.eval.n_tasks = 2
    return c
