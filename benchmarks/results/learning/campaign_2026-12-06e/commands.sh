# Campaign 17, second attempt (2026-12-06, session 25): Skill1 with Qwen2.5-Coder-0.5B-Instruct as the policy,
# seed 2, on one H200 (the lease came as nvidia-h200 after 7 refused calls from 19:59 UTC, which cost 803 of
# the 1,800 device seconds). PROTOCOL.md 2026-12-06e: campaign 17 unchanged + SKILL1_RC=1 (H200: same launch).
# here, before: a fresh checkout; ./setup.sh, then bash benchmarks/device/build_kit.sh smol qwen minilm experts
# (200 planner experts in 830 s on 2 cores, all won).
# From the repo root at commit 43f9d8b, 2026-12-06, 20:43-20:57 UTC, back to back:
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk1 (NVIDIA H200, 143771 MiB)
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk2, then .dk4, then .dk7
bash benchmarks/device/reader_bound.sh kit                               # carry .dkq1, then one call each for .dkq2 ... .dkq12
RL_STEPS=25 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_RC=1 SKIP="skill1_full skill1_sftnt" SKILL1_EXTRA="--config.seed=2 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen --config.eval.at_steps=6,12,18" SAMPLER_GB=8 EVAL_RESERVE=420 bash benchmarks/device/learning.sh launch 900 60   # carry .dk3; 20:45 UTC, 914 device s left
# (same env) bash benchmarks/device/learning.sh wait 480   -> 20:52:35: all three arms done (rc=0); learning.tgz
# then, on the same machine (benchmarks/results/rl_loop.md, "Decode phase alone, on the H200"):
#   source benchmarks/device/kit.sh; python3 benchmarks/sampling.py --model {qwen3-8b,qwen3-1.7b} --batch 256 --prompt-len 1024 \
#     --new-tokens 256 --reference none --split-prefill 1 --repeats 2 --out $OUT/sampling_h200.jsonl   (one call; then 0.6B x 512)
# give_back at 20:57 with 196 s left.
# summary (here; C=benchmarks/results/learning/campaign_2026-12-06e):
#   per arm: logs/<arm>.sh -> command.sh, the log's last 3000 bytes -> log_tail.txt, runs/<arm>/ without skills/,
#   *.sqlite, .staging, metrics.png, checkpoints; logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-06 > $C/tables.md
#   (heldout_curve.py not kept: no arm reached a held-out point)
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl (no pool_games line: one RL step is not campaign 17's reading)
#   the same seed-2 SFT arm of both attempts, paired (printed, not written):
#   python benchmarks/learning/pool_games.py --splits valid_unseen --name x \
#     --pair ../campaign_2026-12-06c/skill1_sft:without_library=$C/skill1_sft:without_library
