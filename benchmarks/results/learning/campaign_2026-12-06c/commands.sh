# Campaign 17 (2026-12-06, session 24), PARTIAL: Skill1 with Qwen2.5-Coder-0.5B-Instruct as the policy, seed 2,
# on an H100 80GB (the lease came as nvidia-h100-x1). SFT and GRPO as PROTOCOL.md 2026-12-06b/c fix them; the
# session's turn was cut off (an API error) after the first wait call, the machine was released while idle and
# the arms died with it at ~RL step 14. What came back is the first wait call's snapshot (05:51 UTC): the SFT
# arm complete (all 134 valid_unseen games) and the GRPO arm's metrics for RL steps 0-13 plus its held-out
# evaluations after steps 6 and 12 (all 134 games each). No final GRPO evaluation; the rc arm never started.
# here, before: a fresh checkout; ./setup.sh, then bash benchmarks/device/build_kit.sh smol qwen minilm experts
# (its size check failed: .dk4 + the tree = 63.4 MiB > its 63 MiB margin; the device then refused .dk4 at 64 MiB,
# so MiniLM's tokenizer/config files were moved to .dk3/minilm by hand -- build_kit.sh does this since).
# From the repo root at commit 01535fa, 2026-12-06, 05:38-05:51 UTC, back to back:
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk1 (NVIDIA H100 80GB HBM3, 81559 MiB)
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk2
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk4 (refused: tree over 64 MiB; again after the move)
bash benchmarks/device/reader_bound.sh kit                               # carry .dkq1, then one call each for .dkq2 ... .dkq12
RL_STEPS=25 ARMSET=skill1 SKILL1_MODEL=qwen SKIP="skill1_full skill1_sftnt" SKILL1_EXTRA="--config.seed=2 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen --config.eval.at_steps=6,12,18" SAMPLER_GB=8 EVAL_RESERVE=420 bash benchmarks/device/learning.sh launch 1590 60   # carry .dk3
# (same env) bash benchmarks/device/learning.sh wait 500   -> 05:51: SFT done (rc=0), GRPO at RL step 14; learning.tgz kept
# -- turn cut off; the next call (07:09-07:17 UTC) found a fresh machine (rl_steps=0): the run was lost; give_back.
# summary (here; C=benchmarks/results/learning/campaign_2026-12-06c, P=benchmarks/results/learning/campaign_2026-12-06):
#   per arm: logs/<arm>.sh -> command.sh, the log's last 3000 bytes -> log_tail.txt, runs/<arm>/ without skills/,
#   *.sqlite, .staging, metrics.png, checkpoints; logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-06 > $C/tables.md
#   python benchmarks/learning/heldout_curve.py $C > $C/heldout.md        # -> $C/heldout.jsonl
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl, then
#   python benchmarks/learning/pool_games.py --splits valid_unseen --date 2026-12-06 --write \
#     --name "Skill1 0.5B (Qwen2.5-Coder) seeds 1-2 pooled by game (campaigns 16h, 17 partial), both after 12 RL steps: GRPO w/o library at step 12 - SFT only" \
#     --pair $P/skill1_sft:without_library=$P/skill1_grpo/eval_steps/step_12:without_library \
#     --pair $C/skill1_sft:without_library=$C/skill1_grpo/eval_steps/step_12:without_library
