# Campaign 9 (2026-12-03b): Skill1 with a KL anchor to the SFT warm start, two seeds (issue 18).
# Changed from campaign 8 (campaign_2026-12-03/commands.sh): rl.kl_coef = 0.05 (k3 estimator, the
# Skill1 released code's estimator; reference = the warm-start weights) on the play objective of
# every RL arm, and a second seed of the grpo and full arms (SKILL1_SEEDS=1 -> skill1_grpo1,
# skill1_full1 with --config.seed=1, same warm start). Everything else as campaign 8: lr 1e-5, one
# on-policy update per rollout batch. Four RL arms share the GPU (0.20 each; SFT arm 0.12) and
# 16 cores (4 environment workers per RL arm, 3 for the SFT arm).
# here, before: ./setup.sh && bash benchmarks/device/build_kit.sh smol minilm experts
# From the repo root; each line one device call, back to back (the lease is released 30 s idle).
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/learning.sh kit                 # carry .dk4 (MiniLM)
ARMSET=skill1 SKILL1_SEEDS=1 SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3" SAMPLER_GB=8 EVAL_RESERVE=480 bash benchmarks/device/learning.sh launch 1505 60   # carry .dk3
ARMSET=skill1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh wait 500
ARMSET=skill1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh wait 550
ARMSET=skill1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh collect 60
# summary (here): python benchmarks/learning/summarize.py $C --out $C --date 2026-12-03b > $C/tables.md
#   pooled over the two seeds (Student-t over seeds), per comparison P:
#   python benchmarks/learning/pool_seeds.py --summary $C/summary.jsonl --pattern "^(seed \d+, )?P$" \
#     --name "campaign 9 (KL 0.05), seeds 0+1 pooled: P" --date 2026-12-03b --write
