# Campaign 15 (2026-12-04): Skill1 with Qwen2.5-Coder-0.5B-Instruct as the policy; arms SFT, the
# hand-written bound, GRPO and full; seed 0; every RL arm capped at 30 steps; evaluation on
# valid_unseen only (issue 18, PROTOCOL.md 2026-12-04; decided in ../campaign_2026-12-04/README.md).
# here, before: the checkout kept .venv, .dk1-.dk6 (build_kit.sh smol minilm experts) and
# .dkq1-.dkq12 (reader_bound.sh prep: the Qwen GGUF in 40 MiB parts) from session 16.
# From the repo root at commit 83a9f40, on 2026-12-04. Each line one device call, back to back
# (the lease is released 30 s idle). The lease used 1,315 of 1,800 device seconds.
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/learning.sh kit                 # carry .dk4 (MiniLM)
bash benchmarks/device/reader_bound.sh kit             # carry .dkq1, then one call each for .dkq2 ... .dkq12
RL_STEPS=30 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_BOUND=1 SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen" SAMPLER_GB=8 EVAL_RESERVE=540 bash benchmarks/device/learning.sh launch 1645 60   # carry .dk3
RL_STEPS=30 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_BOUND=1 bash benchmarks/device/learning.sh wait 480
RL_STEPS=30 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_BOUND=1 bash benchmarks/device/learning.sh wait 470
RL_STEPS=30 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_BOUND=1 bash benchmarks/device/learning.sh collect 520
# The compilation cache did not come back (74,844 KiB: 5 parts, one more than $OUT takes).
# summary (here; C=benchmarks/results/learning/campaign_2026-12-04b):
#   per arm: logs/<arm>.sh -> command.sh, the log's last 3000 bytes -> log_tail.txt, runs/<arm>/
#   without skills/, *.sqlite, .staging, metrics.png (the bound arm keeps skills/: the hand-written
#   library that skill_match.py types); library.sqlite -> library_records.jsonl (one JSON line per
#   row, {"table": name, ...}); logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-04b > $C/tables.md
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   python benchmarks/learning/skill_match.py $C/skill1_full > $C/skill_match.md
#   python benchmarks/learning/skill_match.py $C/skill1_hw --without $C/skill1_sft | tail -n +3 >> $C/skill_match.md
#   python benchmarks/learning/paired_steps.py $C --baseline without_library --arm with_library --out $C/steps.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl; not pooled with the 135M runs (another policy;
#   pool_seeds.py now refuses to pool campaigns of different policies unless --model picks one).
#   The per-step invalid-action rate, util KL, rerank entropy and distil reward quoted in
#   README.md are the keys invalid_action_rate, util/kl, rerank/entropy and distil_reward of each
#   arm's metrics.jsonl.
