# Campaign 16h (2026-12-06, session 23): Skill1 with Qwen2.5-Coder-0.5B-Instruct as the policy, seed 1,
# on an H100 80GB (the lease came as nvidia-h100-x1, so PROTOCOL.md's H100 rule picked 16h: SFT and
# GRPO), followed by a Skill1 full arm of 12 RL steps. Its pairing was decided during the lease,
# before any evaluation was read (README.md, "Setting").
# here, before: a fresh checkout; ./setup.sh, then bash benchmarks/device/build_kit.sh smol qwen minilm experts
# (experts: 200 valid_train games, 200 won, 998 s on 2 cores).
# From the repo root at commit 2c33816, on 2026-12-06, 03:18-03:44 UTC. Each line is one device call, back to
# back (the lease is released after 30 s idle). The lease used 1,540 of 1,800 device seconds.
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk1 (the reply: NVIDIA H100 80GB HBM3, 81559 MiB)
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk2
ARMSET=skill1 SKILL1_MODEL=qwen bash benchmarks/device/learning.sh kit   # carry .dk4 (MiniLM)
bash benchmarks/device/reader_bound.sh kit                               # carry .dkq1, then one call each for .dkq2 ... .dkq12
# campaign 16h (SFT + GRPO; shares rescaled to the H100: sft 0.247, grpo 0.529)
RL_STEPS=25 ARMSET=skill1 SKILL1_MODEL=qwen SKIP="skill1_full skill1_sftnt" SKILL1_EXTRA="--config.seed=1 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen --config.eval.at_steps=12" SAMPLER_GB=8 EVAL_RESERVE=420 bash benchmarks/device/learning.sh launch 1630 60   # carry .dk3
# (same env) bash benchmarks/device/learning.sh wait 480   -> GRPO at step 17
# (same env) bash benchmarks/device/learning.sh wait 480   -> returned after 140 s: both arms done (GRPO 25 steps, evaluated)
# (same env) bash benchmarks/device/learning.sh collect 500
# the full arm, in the same /tmp/L: it loads the SFT arm's warm start ($L/ws/skill1, "SFT skipped")
RL_STEPS=12 ARMSET=skill1 SKILL1_MODEL=qwen SKIP="skill1_sft skill1_grpo skill1_sftnt" SKILL1_EXTRA="--config.seed=1 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen" SAMPLER_GB=8 EVAL_RESERVE=360 bash benchmarks/device/learning.sh launch 860 60
# (same env) bash benchmarks/device/learning.sh wait 420   -> returned after 380 s: full done (12 steps, both conditions evaluated)
# (same env) bash benchmarks/device/learning.sh collect 300
# then two sampler measurements (../../rl_loop.md, "Decode phase alone, on an H100"), then give_back.
# summary (here; C=benchmarks/results/learning/campaign_2026-12-06, B=benchmarks/results/learning/campaign_2026-12-04b):
#   the second collect's learning.tgz holds all three arms. Per arm: logs/<arm>.sh -> command.sh, the log's last
#   3000 bytes -> log_tail.txt, runs/<arm>/ without skills/, *.sqlite, .staging, metrics.png, checkpoints;
#   library.sqlite -> library_records.jsonl (one JSON line per row, {"table": name, ...}); logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-06 > $C/tables.md
#   python benchmarks/learning/heldout_curve.py $C          # -> $C/heldout.jsonl
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   python benchmarks/learning/skill_match.py $C/skill1_full > $C/skill_match.md
#   python benchmarks/learning/paired_steps.py $C --baseline without_library --arm with_library --out $C/steps.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl, then (each --splits valid_unseen --date 2026-12-06 --write):
#   python benchmarks/learning/pool_games.py --name "Skill1 0.5B (Qwen2.5-Coder) seeds 0-1 pooled by game (campaigns 15, 16h): GRPO w/o library - SFT only" \
#     --pair $B/skill1_sft:without_library=$B/skill1_grpo:without_library --pair $C/skill1_sft:without_library=$C/skill1_grpo:without_library
#   python benchmarks/learning/pool_games.py --name "Skill1 0.5B seed 1 (campaign 16h), both after 12 RL steps: full with library - GRPO w/o library at step 12" \
#     --pair $C/skill1_grpo/eval_steps/step_12:without_library=$C/skill1_full:with_library
#   python benchmarks/learning/pool_games.py --name "Skill1 0.5B seed 1 (campaign 16h), both after 12 RL steps: full without library - GRPO w/o library at step 12" \
#     --pair $C/skill1_grpo/eval_steps/step_12:without_library=$C/skill1_full:without_library
