# Campaign 11 (2026-12-03d): the Skill1 warm start with rerank demonstrations (sft.rerank_demos),
# the reader bound under it, and seeds 0 and 1 of grpo / full at campaign 9's RL setting (issue 18).
# here, before: ./setup.sh && bash benchmarks/device/build_kit.sh smol minilm experts
# From the repo root at commit 1dd3332 + the PROTOCOL entry; each line one device call, back to
# back (the lease is released 30 s idle). The launch was first refused: the tracked tree (16 MiB)
# plus .dk3 (GGUF part 2 of 48 MB, planner records) passed 64 MiB. For this lease part 2 was cut
# in two by hand (the second half carried as .dk5 in one more kit call before the launch);
# build_kit.sh now cuts the GGUF 33 / 34 / 31 MB instead, so the calls below fit as written.
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/learning.sh kit                 # carry .dk4 (MiniLM)
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS=1 SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3" SAMPLER_GB=8 EVAL_RESERVE=480 bash benchmarks/device/learning.sh launch 1610 60   # carry .dk3
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh wait 500
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh wait 500
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS=1 bash benchmarks/device/learning.sh collect 470
# summary (here; C=benchmarks/results/learning/campaign_2026-12-03d):
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-03d > $C/tables.md
#   (python benchmarks/learning/skill_match.py $C/skill1_hw --without $C/skill1_sft;
#    python benchmarks/learning/skill_match.py $C/skill1_full $C/skill1_full1) > $C/skill_match.md
#   python benchmarks/learning/paired_steps.py $C --baseline without_library --arm with_library --out $C/steps.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl, then pooled every Skill1 run (a new setting: no
#   seed pool over two seeds):
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?full: with - without its library$" --by run \
#     --name "Skill1 runs of campaigns 1-11 pooled (135M, settings differ): full: with - without its library" --date 2026-12-03d --write
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?headline: full with library - GRPO w/o library$" --by run \
#     --name "Skill1 runs of campaigns 2-11 pooled (135M, settings differ): headline: full with library - GRPO w/o library" --date 2026-12-03d --write
