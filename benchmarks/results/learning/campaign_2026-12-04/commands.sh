# Campaign 14 (2026-12-04): Skill1's SFT, GRPO and full arms plus skill1_l1z (the full arm with
# rl.lambda_rerank=0, the paper's "lambda1 = 0" row), seed 4 for all, every RL arm stopped after
# 30 steps (issue 18, PROTOCOL.md 2026-12-04; decided in ../campaign_2026-12-03f/README.md).
# here, before: the checkout kept .venv and .dk1-.dk6 from session 15 (build_kit.sh smol minilm
# experts; .dk5/.dk6 = campaign 13's compilation cache, jaxcache.sh place)
# From the repo root at commit c58d2c7, on 2026-12-04. Each line one device call, back to back
# (the lease is released 30 s idle). The lease used 1,350 of 1,800 device seconds.
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/learning.sh kit                 # carry .dk4 (MiniLM)
bash benchmarks/device/learning.sh kit                 # carry .dk5 (compilation cache, parts aa ab)
bash benchmarks/device/learning.sh kit                 # carry .dk6 (compilation cache, parts ac ad)
RL_STEPS=30 ARMSET=skill1 SKILL1_L1Z=1 SKILL1_EXTRA="--config.seed=4 --config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3" SAMPLER_GB=8 EVAL_RESERVE=480 bash benchmarks/device/learning.sh launch 1640 60   # carry .dk3
RL_STEPS=30 ARMSET=skill1 SKILL1_L1Z=1 bash benchmarks/device/learning.sh wait 500
RL_STEPS=30 ARMSET=skill1 SKILL1_L1Z=1 bash benchmarks/device/learning.sh wait 500
RL_STEPS=30 ARMSET=skill1 SKILL1_L1Z=1 bash benchmarks/device/learning.sh collect 500
# The collect brought back the compilation cache (71,800 KiB, 62.4 MB gzipped, 4 parts):
#   bash benchmarks/device/jaxcache.sh place FILES_AT    -> .dk5 (31 MiB), .dk6 (30 MiB)
# summary (here; C=benchmarks/results/learning/campaign_2026-12-04):
#   per arm: logs/<arm>.sh -> command.sh, the log's last 3000 bytes -> log_tail.txt, runs/<arm>/
#   without skills/, *.sqlite, .staging, metrics.png; library.sqlite -> library_records.jsonl
#   (one JSON line per row, {"table": name, ...}); logs/gpu.csv -> gpu.csv
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-04 > $C/tables.md
#   python benchmarks/learning/skill_match.py $C/skill1_full $C/skill1_l1z > $C/skill_match.md
#   python benchmarks/learning/paired_steps.py $C --baseline without_library --arm with_library --out $C/steps.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl, then pooled every Skill1 run (seed 4 is read
#   alone, as fixed before launch: no --by seed line):
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?full: with - without its library$" --by run \
#     --name "Skill1 runs of campaigns 1-14 pooled (135M, settings differ): full: with - without its library" --date 2026-12-04 --write
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?headline: full with library - GRPO w/o library$" --by run \
#     --name "Skill1 runs of campaigns 2-14 pooled (135M, settings differ): headline: full with library - GRPO w/o library" --date 2026-12-04 --write
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?GRPO w/o library - SFT only$" --by run \
#     --name "Skill1 runs of campaigns 2-14 pooled (135M, settings differ): GRPO w/o library - SFT only" --date 2026-12-04 --write
#   python benchmarks/learning/run_shape.py $C --out $C/run_shape.md --jsonl $C/run_shape.jsonl
#   (the run-shape table: steps, step time and phases, builds, KL, grad norms, training-success
#   trend, NDCG, distil parse per half); the per-step rerank entropy / loss and distil KL / parse
#   rate quoted in README.md are the keys rerank/entropy, rerank/loss, distil/kl and
#   distil_parse_rate of each arm's metrics.jsonl.
# After the collect and give_back, the lease's last 450 s checked campaign 15's launch line (a
# smoke run, cut by the lease; see README.md "Next lease"), at this record's working tree:
#   bash benchmarks/device/learning.sh kit      # carry .dk1, .dk2, .dk4 (3 calls)
#   bash benchmarks/device/reader_bound.sh kit  # carry .dkq1 ... .dkq11 (11 calls)
#   RL_STEPS=30 ARMSET=skill1 SKILL1_MODEL=qwen SKILL1_BOUND=1 SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3 --config.eval.splits=valid_unseen" SAMPLER_GB=8 EVAL_RESERVE=60 COLLECT_MARGIN=20 bash benchmarks/device/learning.sh launch 320 275   # carry .dk3
