# Campaign 19, below the floor (2026-12-07, session 32): Skill1 with Qwen2.5-Coder-0.5B-Instruct as the policy, seed 0,
# SFT + the released-code GRPO arm (no library) at lr 3e-6 (SKILL1_RC_LR), on one H100: the session-29 line with
# the H100 rule (SKIP the lr-1e-5 rc arm), EVAL_RESERVE=150 and COLLECT_MARGIN=40 (the session-31 820-870 s line),
# launched with LEFT 750 s, under its 820 s floor: a deliberate deviation (PROTOCOL.md session 32): the session's
# remaining budget was lost otherwise, and K (the movement check) is read at the steps reached.
# here, before: a fresh checkout; ./setup.sh, then `bash benchmarks/device/build_kit.sh qwen minilm experts`
# (experts: 200 / 200 valid_train games planned in 646 s on this 2-core machine).
# Device: 20:24 none (91 s); 20:32 status "paused" (lifted by 20:48); 20:48 and 21:01 none (180 s each, both cards);
# 21:14 an H100 (kit .dk1), taken back during the next kit call, and 14 calls in one batch then refused or found
# none (~300 s); 21:26 an H100 (81,559 MiB) with 848 s left.
# From the repo root at commit 7e17eb7, 2026-12-07, 21:26-21:40 UTC, back to back:
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk1 (NVIDIA H100 80GB HBM3, 81559 MiB)
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk2, then .dk4, then .dk7
bash benchmarks/device/reader_bound.sh kit                               # carry .dkq1, then one call each for .dkq2 ... .dkq12
RL_STEPS=25 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_RC=1 SKILL1_RC_LR=3e-6 SKIP="skill1_grpo skill1_full skill1_grpo_rc" SKILL1_EXTRA="--config.seed=0 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen" SAMPLER_GB=8 EVAL_RESERVE=150 COLLECT_MARGIN=40 bash benchmarks/device/learning.sh launch 750 480   # carry .dk3; 21:29 UTC, 764 device s left
#   (shares rescaled to the H100: skill1_sft 0.247, skill1_grpo_rc_lr 0.529; RL deadline launch + 560 s)
ARMSET=skill1 SKILL1_RC=1 SKILL1_RC_LR=3e-6 SKIP="skill1_grpo skill1_full skill1_grpo_rc" bash benchmarks/device/learning.sh collect 225
#   -> 21:40: SFT done (rc=0), rc_lr arm stopped by the deadline after 21 of its 25 RL steps (steps 0-20), evaluated (rc=0)
# give_back at 21:40 with 60 s left.
# summary (here; C=benchmarks/results/learning/campaign_2026-12-07b):
#   per arm: logs/<arm>.sh -> command.sh, the log's last 3000 bytes -> log_tail.txt, runs/<arm>/ without skills/,
#   *.sqlite, .staging, metrics.png, checkpoints; logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-07 > $C/tables.md
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl (3 lines)
#   python benchmarks/learning/train_trend.py --out ../train_trend.md --jsonl ../train_trend.jsonl   (38 runs now)
