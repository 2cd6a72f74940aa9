# Campaign 12 (2026-12-03e): the Skill1 warm start at the generic distil level (sft.distil_level="generic")
# and the KL anchor on the distil objective too (rl.kl_objectives="util,distil"), both on in
# configs/skill1_alfworld_learning.py; the reader bound under it; seeds 0 and 1 of grpo / full (issue 18).
# here, before: ./setup.sh && bash benchmarks/device/build_kit.sh smol minilm experts
# From the repo root at commit 23c220d; each line one device call, back to back (the lease is
# released 30 s idle). The lease held the machine 1,667 of 1,800 device seconds.
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/learning.sh kit                 # carry .dk4 (MiniLM)
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS=1 SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3" SAMPLER_GB=8 EVAL_RESERVE=480 bash benchmarks/device/learning.sh launch 1675 60   # carry .dk3
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh wait 500
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh wait 500
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh collect 530
# The collect also brought back the compilation cache (57,652 KiB, 50.2 MB gzipped, 4 parts):
#   bash benchmarks/device/jaxcache.sh place FILES_AT    -> .dk5 (31 MiB), .dk6 (18 MiB) for the next lease
# summary (here; C=benchmarks/results/learning/campaign_2026-12-03e):
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-03e > $C/tables.md
#   (python benchmarks/learning/skill_match.py $C/skill1_hw --without $C/skill1_sft;
#    python benchmarks/learning/skill_match.py $C/skill1_full $C/skill1_full1) > $C/skill_match.md
#   python benchmarks/learning/paired_steps.py $C --baseline without_library --arm with_library --out $C/steps.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl, then pooled every Skill1 run:
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?full: with - without its library$" --by run \
#     --name "Skill1 runs of campaigns 1-12 pooled (135M, settings differ): full: with - without its library" --date 2026-12-03e --write
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?headline: full with library - GRPO w/o library$" --by run \
#     --name "Skill1 runs of campaigns 2-12 pooled (135M, settings differ): headline: full with library - GRPO w/o library" --date 2026-12-03e --write
#   and this campaign's two seeds pooled game by game (post hoc: the tool was written after the per-seed numbers):
#   python benchmarks/learning/pool_games.py --pair $C/skill1_full:without_library=$C/skill1_full:with_library \
#     --pair $C/skill1_full1:without_library=$C/skill1_full1:with_library \
#     --name "Skill1 campaign 12, seeds 0-1 pooled by game: full: with - without its library" --date 2026-12-03e --write
#   python benchmarks/learning/pool_games.py --pair $C/skill1_grpo:without_library=$C/skill1_full:with_library \
#     --pair $C/skill1_grpo1:without_library=$C/skill1_full1:with_library \
#     --name "Skill1 campaign 12, seeds 0-1 pooled by game: headline: full with library - GRPO w/o library" --date 2026-12-03e --write
#   python benchmarks/learning/pool_games.py --pair $C/skill1_sft:without_library=$C/skill1_grpo:without_library \
#     --pair $C/skill1_sft:without_library=$C/skill1_grpo1:without_library \
#     --name "Skill1 campaign 12, seeds 0-1 pooled by game: GRPO w/o library - SFT only" --date 2026-12-03e --write
