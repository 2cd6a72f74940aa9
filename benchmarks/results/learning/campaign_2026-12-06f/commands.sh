# Campaign 17, third attempt (2026-12-06, session 26): Skill1 with Qwen2.5-Coder-0.5B-Instruct as the policy,
# seed 2, on one H200 (the first call got one; 1,763 device s left after it). PROTOCOL.md 2026-12-06f: campaign
# 17 unchanged, now on the common-random-number evaluation (commit 27ea665), SKILL1_RC=1 (H200: same launch).
# here, before: the session-25 checkout with its kit folders (.dk1-.dk7, .dkq1-.dkq12) and .venv.
# From the repo root at commit d276cfa, 2026-12-06, 22:45-23:08 UTC, back to back:
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk1 (NVIDIA H200, 143771 MiB)
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk2, then .dk4, then .dk7
bash benchmarks/device/reader_bound.sh kit                               # carry .dkq1, then one call each for .dkq2 ... .dkq12
RL_STEPS=25 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_RC=1 SKIP="skill1_full skill1_sftnt" SKILL1_EXTRA="--config.seed=2 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen --config.eval.at_steps=6,12,18" SAMPLER_GB=8 EVAL_RESERVE=420 bash benchmarks/device/learning.sh launch 1640 60   # carry .dk3; 22:47 UTC, 1,651 device s left
#   (this call was piped to `| tail -30` and ran out its 300 s timeout: a backgrounded `[ ] || nvidia-smi &` subshell
#    held the pipe; the arms ran regardless. Fixed in learning.sh since, with a test.)
bash benchmarks/device/learning.sh wait 480   # -> 23:00: SFT done (rc=0), GRPO at RL step 20
bash benchmarks/device/learning.sh wait 480   # -> 23:08: all three arms done (rc=0) since ~23:03; learning.tgz
#   (both waits ran without the launch's environment, so they waited for the default arm list and the second one
#    ran its full 480 s; learning.sh now writes the launched arms to $L/arms and wait/status follow that file)
# give_back at 23:08 with 356 s left.
# summary (here; C=benchmarks/results/learning/campaign_2026-12-06f, R=benchmarks/results/learning):
#   per arm: logs/<arm>.sh -> command.sh, the log's last 3000 bytes -> log_tail.txt, runs/<arm>/ without skills/,
#   *.sqlite, .staging, metrics.png, checkpoints; logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-06 > $C/tables.md
#   python benchmarks/learning/heldout_curve.py $C > $C/heldout.md        # -> $C/heldout.jsonl
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl (6 lines), then the two pooled lines:
#   python benchmarks/learning/pool_games.py --splits valid_unseen --date 2026-12-06 --write \
#     --name "Skill1 0.5B (Qwen2.5-Coder) seeds 0-2 pooled by game (campaigns 15, 16h, 17), each GRPO arm's final evaluation (30, 25, 25 RL steps; seeds 0-1 before common-random-number evaluation): GRPO w/o library - SFT only" \
#     --pair $R/campaign_2026-12-04b/skill1_sft:without_library=$R/campaign_2026-12-04b/skill1_grpo:without_library \
#     --pair $R/campaign_2026-12-06/skill1_sft:without_library=$R/campaign_2026-12-06/skill1_grpo:without_library \
#     --pair $C/skill1_sft:without_library=$C/skill1_grpo:without_library
#   python benchmarks/learning/pool_games.py --splits valid_unseen --date 2026-12-06 --write \
#     --name "Skill1 0.5B (Qwen2.5-Coder) seeds 1-2 pooled by game (campaigns 16h, 17), both after 12 RL steps (seed 1 before common-random-number evaluation): GRPO w/o library at step 12 - SFT only" \
#     --pair $R/campaign_2026-12-06/skill1_sft:without_library=$R/campaign_2026-12-06/skill1_grpo/eval_steps/step_12:without_library \
#     --pair $C/skill1_sft:without_library=$C/skill1_grpo/eval_steps/step_12:without_library
#   printed, not written (same seed-2 SFT arm across attempts; rc - GRPO at each held-out point):
#   python benchmarks/learning/pool_games.py --splits valid_unseen --name x --pair $R/campaign_2026-12-06e/skill1_sft:without_library=$C/skill1_sft:without_library
#   python benchmarks/learning/pool_games.py --splits valid_unseen --name x --pair $C/skill1_grpo/eval_steps/step_6:without_library=$C/skill1_grpo_rc/eval_steps/step_6:without_library   # also 12, 18
