# Campaign 20, seed 1 (2026-12-08 UTC, session 33): Skill1 with Qwen2.5-Coder-0.5B-Instruct as the policy, seed 1,
# SFT + the released-code GRPO arm (no library) at lr 3e-6 (SKILL1_RC_SEEDS="1"), on one H100: PROTOCOL.md session 29
# outcome (a) / session 32, one seed per lease (an H100 cannot hold two: 1.18 of its memory). LEFT 890 s after the kit:
# the session-31 870-950 s line (EVAL_RESERVE=150); valid_unseen only (valid_seen needs LEFT >= 1,300, session 33).
# here, before: a fresh checkout; ./setup.sh, then `bash benchmarks/device/build_kit.sh qwen minilm experts`
# (experts: 200 / 200 valid_train games planned in ~20 min on this 2-core machine).
# Device: 23:40 none (91 s); 23:49 none (180 s, both cards); 00:01 none (180 s); 00:13 none (H100 named, 90 s);
# 00:15 none (H200 named, 180 s: it fell back to both); 00:24 refused in the H100 back-off (15 s);
# 00:28 an H100 (81,559 MiB) with 968 s left.
# From the repo root at commit c226b74, 2026-12-08, 00:28-00:43 UTC, back to back:
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk1 (NVIDIA H100 80GB HBM3, 81559 MiB)
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk2, then .dk4, then .dk7
bash benchmarks/device/reader_bound.sh kit                               # carry .dkq1, then one call each for .dkq2 ... .dkq12
RL_STEPS=25 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_RC_SEEDS="1" SKILL1_EXTRA="--config.train.lr=3e-6 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen" SAMPLER_GB=8 EVAL_RESERVE=150 bash benchmarks/device/learning.sh launch 890 480   # carry .dk3; 897 device s left
#   (shares rescaled to the H100: skill1_sft_s1 0.247, skill1_grpo_rc_s1 0.344; RL deadline launch + 665 s)
ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_RC_SEEDS="1" bash benchmarks/device/learning.sh collect 320
#   -> 00:42 (device clock): both arms done (rc=0), the rc arm ran all 25 RL steps and was evaluated; give_back with 152 s left.
# summary (here; C=benchmarks/results/learning/campaign_2026-12-08):
#   per arm: logs/<arm>.sh -> command.sh, the log's last 3000 bytes -> log_tail.txt, runs/<arm>/ without skills/,
#   *.sqlite, .staging, metrics.png, checkpoints; logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-08 > $C/tables.md
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl (3 lines)
#   python benchmarks/learning/train_trend.py --out ../train_trend.md --jsonl ../train_trend.jsonl   (39 runs now)
#   interim pool (seeds 0-1; the pre-registered reading waits for seed 2):
#   python benchmarks/learning/pool_games.py --pair campaign_2026-12-07b/skill1_sft:without_library=campaign_2026-12-07b/skill1_grpo_rc_lr:without_library \
#     --pair $C/skill1_sft_s1:without_library=$C/skill1_grpo_rc_s1:without_library --splits valid_unseen --name ...
