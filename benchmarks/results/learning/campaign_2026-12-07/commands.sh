# Campaign 18, reduced (2026-12-07, session 29): Skill1 with Qwen2.5-Coder-0.5B-Instruct as the policy, seed 0,
# SFT + the released-code GRPO arm (no library), on one H100: PROTOCOL.md 2026-12-07 (session 27) rule
# "H100, or 950-1,100 s -> seed 0's SFT + rc alone (EVAL_RESERVE=240, no held-out point during RL)".
# here, before: a fresh checkout; ./setup.sh, then `bash benchmarks/device/build_kit.sh qwen minilm experts`
# (experts: 200 / 200 valid_train games planned in 661 s on this 2-core machine).
# Device: six tries found no machine (11:59-12:33 UTC, 631 device s); the seventh (12:41) got an H100 (81,559 MiB).
# From the repo root at commit 4f616fb, 2026-12-07, 12:41-12:55 UTC, back to back:
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk1 (NVIDIA H100 80GB HBM3, 81559 MiB)
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk2, then .dk4, then .dk7
bash benchmarks/device/reader_bound.sh kit                               # carry .dkq1, then one call each for .dkq2 ... .dkq12
RL_STEPS=25 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_RC=1 SKIP="skill1_grpo skill1_full" SKILL1_EXTRA="--config.seed=0 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen" SAMPLER_GB=8 EVAL_RESERVE=240 bash benchmarks/device/learning.sh launch 1060 60   # carry .dk3; 12:42 UTC, 1,068 device s left
#   (shares rescaled to the H100: skill1_sft 0.247, skill1_grpo_rc 0.529; the rc arm's KL pinned at 0.01 k3 by RC_PIN)
ARMSET=skill1 bash benchmarks/device/learning.sh wait 480      # -> 12:52: SFT done (rc=0), rc arm at RL step 24
ARMSET=skill1 bash benchmarks/device/learning.sh collect 400   # -> 12:53: both arms done (rc=0); learning.tgz
# give_back at 12:54 with 400 s left.
# summary (here; C=benchmarks/results/learning/campaign_2026-12-07, R=benchmarks/results/learning):
#   per arm: logs/<arm>.sh -> command.sh, the log's last 3000 bytes -> log_tail.txt, runs/<arm>/ without skills/,
#   *.sqlite, .staging, metrics.png, checkpoints; logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-07 > $C/tables.md   # (the seed, 0, read from config.json)
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl (3 lines), then the two pooled lines (PROTOCOL.md 2026-12-06g's
#   primary reading with the seeds run: 0 and 2):
#   python benchmarks/learning/pool_games.py --splits valid_unseen --date 2026-12-07 --write \
#     --name "Skill1 0.5B (Qwen2.5-Coder) seeds 0 and 2 pooled by game (campaigns 18 reduced, 17), each rc arm's final evaluation after 25 RL steps, common random numbers: GRPO w/o library, released-code objective - SFT only" \
#     --pair $R/campaign_2026-12-06f/skill1_sft:without_library=$R/campaign_2026-12-06f/skill1_grpo_rc:without_library \
#     --pair $C/skill1_sft:without_library=$C/skill1_grpo_rc:without_library
#   python benchmarks/learning/pool_seeds.py --pattern '^(seed \d+, )?GRPO w/o library, released-code objective - SFT only$' \
#     --model qwen2.5-coder-0.5b --date 2026-12-07 --write \
#     --name "Skill1 0.5B (Qwen2.5-Coder) rc - SFT, seed as the unit (seeds 0, 2; 25 RL steps each, common random numbers)"
