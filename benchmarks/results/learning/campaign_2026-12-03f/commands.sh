# Campaign 13 (2026-12-03f): a replication of campaign 12's setting (configs/skill1_alfworld_learning.py,
# no change that reaches the policy) with seeds 2 and 3 of grpo / full, the SFT arm (seed 0) and the
# reader bound; every RL arm stops after 22 steps (issue 18, PROTOCOL.md 2026-12-03f).
# here, before: ./setup.sh && bash benchmarks/device/build_kit.sh smol minilm experts
# (the session-14 checkout and its .dk5/.dk6 compilation cache were lost, so no cache was carried)
# From the repo root at commit 920a177, on 2026-12-04 (the 2026-12-03 launch of the same calls was
# lost: its session ended before the wait and collect calls). Each line one device call, back to
# back (the lease is released 30 s idle). The lease held the machine 1,475 of 1,800 device seconds.
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/learning.sh kit                 # carry .dk4 (MiniLM)
RL_STEPS=22 ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS="2 3" SKIP="skill1_grpo skill1_full" SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3" SAMPLER_GB=8 EVAL_RESERVE=480 bash benchmarks/device/learning.sh launch 1700 60   # carry .dk3
RL_STEPS=22 ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS="2 3" SKIP="skill1_grpo skill1_full" bash benchmarks/device/learning.sh wait 500
RL_STEPS=22 ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS="2 3" SKIP="skill1_grpo skill1_full" bash benchmarks/device/learning.sh wait 500
RL_STEPS=22 ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS="2 3" SKIP="skill1_grpo skill1_full" bash benchmarks/device/learning.sh collect 540
# The collect also brought back the compilation cache (64,408 KiB, 55.9 MB gzipped, 4 parts):
#   bash benchmarks/device/jaxcache.sh place FILES_AT    -> .dk5 (31 MiB), .dk6 (24 MiB) for the next lease
# summary (here; C=benchmarks/results/learning/campaign_2026-12-03f, P=benchmarks/results/learning/campaign_2026-12-03e):
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-03f > $C/tables.md
#   (python benchmarks/learning/skill_match.py $C/skill1_hw --without $C/skill1_sft;
#    python benchmarks/learning/skill_match.py $C/skill1_full2 $C/skill1_full3) > $C/skill_match.md
#   python benchmarks/learning/paired_steps.py $C --baseline without_library --arm with_library --out $C/steps.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl, then pooled every Skill1 run:
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?full: with - without its library$" --by run \
#     --name "Skill1 runs of campaigns 1-13 pooled (135M, settings differ): full: with - without its library" --date 2026-12-03f --write
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?headline: full with library - GRPO w/o library$" --by run \
#     --name "Skill1 runs of campaigns 2-13 pooled (135M, settings differ): headline: full with library - GRPO w/o library" --date 2026-12-03f --write
#   the primary reading (fixed before launch), seeds 2-3 pooled game by game:
#   python benchmarks/learning/pool_games.py --pair $C/skill1_full2:without_library=$C/skill1_full2:with_library \
#     --pair $C/skill1_full3:without_library=$C/skill1_full3:with_library \
#     --name "Skill1 campaign 13, seeds 2-3 pooled by game: full: with - without its library" --date 2026-12-03f --write
#   python benchmarks/learning/pool_games.py --pair $C/skill1_grpo2:without_library=$C/skill1_full2:with_library \
#     --pair $C/skill1_grpo3:without_library=$C/skill1_full3:with_library \
#     --name "Skill1 campaign 13, seeds 2-3 pooled by game: headline: full with library - GRPO w/o library" --date 2026-12-03f --write
#   python benchmarks/learning/pool_games.py --pair $C/skill1_sft:without_library=$C/skill1_grpo2:without_library \
#     --pair $C/skill1_sft:without_library=$C/skill1_grpo3:without_library \
#     --name "Skill1 campaign 13, seeds 2-3 pooled by game: GRPO w/o library - SFT only" --date 2026-12-03f --write
#   the secondary readings, seeds 0-3 of campaigns 12-13, by game and by seed (Student-t):
#   python benchmarks/learning/pool_games.py --pair $P/skill1_full:without_library=$P/skill1_full:with_library \
#     --pair $P/skill1_full1:without_library=$P/skill1_full1:with_library \
#     --pair $C/skill1_full2:without_library=$C/skill1_full2:with_library \
#     --pair $C/skill1_full3:without_library=$C/skill1_full3:with_library \
#     --name "Skill1 campaigns 12-13, seeds 0-3 pooled by game: full: with - without its library" --date 2026-12-03f --write
#   python benchmarks/learning/pool_games.py --pair $P/skill1_grpo:without_library=$P/skill1_full:with_library \
#     --pair $P/skill1_grpo1:without_library=$P/skill1_full1:with_library \
#     --pair $C/skill1_grpo2:without_library=$C/skill1_full2:with_library \
#     --pair $C/skill1_grpo3:without_library=$C/skill1_full3:with_library \
#     --name "Skill1 campaigns 12-13, seeds 0-3 pooled by game: headline: full with library - GRPO w/o library" --date 2026-12-03f --write
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?full: with - without its library$" --by seed \
#     --name "Skill1 campaigns 12-13, seeds 0-3 (Student-t over seeds): full: with - without its library" --date 2026-12-03f --write
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?headline: full with library - GRPO w/o library$" --by seed \
#     --name "Skill1 campaigns 12-13, seeds 0-3 (Student-t over seeds): headline: full with library - GRPO w/o library" --date 2026-12-03f --write
#   (--by seed keeps each seed's latest date: seeds 0-1 from 2026-12-03e, seeds 2-3 from 2026-12-03f)
