"""Skill1 on ALFWorld at the paper's settings (DESIGN.md §1.3): the Skill1 paper-settings config.

Command (accelerator; Qwen3 checkpoint folder or the embedded SmolLM2):
    python -m skillax.main --config configs/skill1_alfworld.py --workdir runs/skill1_alfworld \
        --config.model.path=/path/to/Qwen3-8B --config.mesh.shape="(1,-1,1)"
Variants: --config.objective=released_code (10 * won + 0.3 * NDCG per trajectory, 0.1 off per
invalid step, GRPO over all step samples of a group, distil untrained, K = 3, k3 KL 0.01;
methods/skill1/objectives.py cites each term).
Ablation rows of the paper's ablation table (config_defaults.skill1 documents each):
  w/o Select.   --config.ablation=no_selection      w/o Distill.  --config.ablation=no_distillation
  w/o Library   --config.ablation=no_library        lambda1 = 0   --config.rl.lambda_rerank=0
  lambda2 = 0   --config.rl.lambda_distil=0         lambda1 = lambda2 = 0: both.
Paper behaviour by default, alternatives as switches: rl.distil_parse_fail = "zero" (released
code) | "floor" (-1, ours) | "raw"; rl.rerank_baseline = "none" (paper REINFORCE) | "batch_mean"
(ours); library.count_mode = "selected" (paper n(s)) | "retrieved";
the distil prompt renders the whole trajectory (rollout.distil_prompt_chars, middle elided
beyond it).

Hyper-parameters (key, value here, source; seed = ../shared/seeds/002, the paper's summary;
tests/test_paper_settings.py pins every line, value and source tag):
  rollout.top_k             5               paper [002 §2.1]: top-K candidates, K = 5 (released code 3)
  library.capacity          5000            paper [002 §2.1]: library capacity 5000
  library.count_mode        "selected"      paper [002 §2.1]: n(s) = times s was selected (top-1)
  rl.lambda_rerank          0.3             paper [002 §2.2]: lambda1 = 0.3
  rl.lambda_distil          0.3             paper [002 §2.2]: lambda2 = 0.3
  objective                 "paper"         paper [002 §2.2]: J = J_util + l1 J_rerank + l2 J_distill; util
      GRPO on r, rerank REINFORCE on NDCG (no group normalisation), distil GRPO on r - max U
      normalised apart [002 §2.3]
  rl.kl_coef                0.0             paper [002 §2.2]: J has no KL term (released code 0.01)
  ablation                  "none"          paper [002 §3.2]: the full-model row
  library.eviction          "log2_n_plus_1" deviation: paper U*log(n(s)) [002 §2.1]; the released
      code's U*log2(n+1) here, because U*ln(n) scores every never-selected skill 0 (n = 1 at
      birth), so a full library would evict each new skill before it could be retrieved
      ("paper_log_n" is the switch; skills/library.py)
  model.path                "smollm2"       deviation: paper Qwen2.5-7B-Instruct [002 §6]; the embedded
      SmolLM2-135M runs on one GPU in minutes (override with a Qwen checkpoint folder)
  rollout.threshold         0.4             DESIGN §1.3: keep cos >= 0.4 (not in the seed)
  library.alpha             0.05            DESIGN §1.3: EMA rate (the seed states the EMA, not alpha)
  library.merge_threshold   0.85            DESIGN §1.3: merge when strategy identical and scenario cos > 0.85
  play.history_k            2               DESIGN §1.3: history of the last 2 steps
  rl.distil_parse_fail      "zero"          released code [issue 19.1]: R_distill = 0 on an unparsable JSON
  tasks_per_step            16              issue 7 (not in the seed): 16 tasks per step
  group_size                8               issue 7 (not in the seed): G = 8 rollouts per task
  train.lr                  1e-6            issue 7 (not in the seed): RL learning rate
  train.schedule            "constant"      ours [issue 19.7]: one constant rate ("cosine" opt-in)
  env.max_steps             50              issue 7 (not in the seed): ALFWorld episode cap T
  temperature               1.0             issue 7 (not in the seed): rollout temperature
  eval.temperature          0.4             issue 7 (not in the seed): evaluation temperature
  rollout.action_tokens     2048            issue 7 (not in the seed): responses <= 2048 tokens
  rl.mini_batches           1               ours: one update per rollout batch (seed states none)
  rl.epochs                 1               ours: one pass over the rollout batch (seed states none)
  rl.eps_low                0.2             ours: PPO clip (seed states no epsilon)
  rl.eps_high               0.28            ours: clip-higher (inert at rl.mini_batches = 1: ratio 1)
  rl.entropy_coef           0.001           ours (seed states none)
  play.invalid_penalty      0.1             released code: only objective="released_code" reads it
  rollout.distil_prompt_chars 3000          ours: trajectory view budget (paper: the whole trajectory)
  model.max_len             8192            ours: SmolLM2's positions
  sft.steps                 200             ours: play SFT warm start (the paper's policy needs none)

Should show (paper, Qwen2.5-7B-class policy): ALFWorld success rising towards 97.5 %
(GRPO 77.6 %, no library 80.9 %); eval on valid_unseen with vs without the library.
"""

from skillax import config_defaults


def get_config():
    c = config_defaults.skill1(env_name="alfworld")
    c.model.path = "smollm2"
    c.model.max_len = 8192
    # rows up to model.max_len must fit a bucket (config_check.check_buckets): 6144, 8192 added
    c.train.length_buckets = tuple(c.train.length_buckets) + (6144, 8192)
    c.env.workers = 8
    c.rollout.action_tokens = 2048
    c.rollout.distil_tokens = 2048
    c.train.micro_batch = 16
    c.sft.steps = 200
    c.sft.n_tasks = 200
    return c
