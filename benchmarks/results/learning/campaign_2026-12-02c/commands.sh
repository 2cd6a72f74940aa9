# Campaign 7 (2026-12-02c), one H200 lease, from the repo root (each line one device call).
# here, before: ./setup.sh && bash benchmarks/device/build_kit.sh qwen experts
#   (this lease: the kit of the previous session, 88 of 200 planner records; PREFETCH=14 planned the rest on the device)
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/reader_bound.sh kit             # carry .dk2 + .dkq9 (kit.sh copies .dk2 too)
bash benchmarks/device/reader_bound.sh kit             # x8, carry .dkq1 ... .dkq8 (the Qwen GGUF parts)
PREFETCH=14 ARMSET=search SEEDS="1 2 3" SEED_SHARE=0.3 SEED_CONDS="no_memory,handwritten --config.eval.splits=valid_unseen --config.env.workers=5 --config.sft.play_contrast=True --config.sft.steps=0" PLAY_STEPS=360 SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh launch LEFT 60   # carry .dk3
ARMSET=search SEEDS="1 2 3" SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh wait 540
ARMSET=search SEEDS="1 2 3" SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh collect 540
# stopped seed 3 during its SFT (to fit the lease), from the next call:
#   pkill -f "[w]orkdir /tmp/L/runs/skillos_ss3"     (without the [w], pkill -f matches the call's own shell)
# summary (here): python benchmarks/learning/summarize.py $C --out $C --date 2026-12-02c > $C/tables.md  (arms renamed skillos_ss<k> -> skillos_sc<k>)
#                 python benchmarks/learning/pool_seeds.py --pattern '^contrast reader, seed \d+: teacher skills - No Memory \(upper bound\)$' --name "contrast reader, seeds pooled: teacher skills - No Memory (upper bound)" --date 2026-12-02c --write
#                 python benchmarks/learning/paired_steps.py $C
# next lease (prepared): contrast readers (seeds 1-3, arms skillos_sd<k>), both splits, teacher skills retrieved over
# name + description, planner records carried (untar experts.tgz from a collect into .dk3/cache first):
#   PREFETCH=14 ARMSET=search SEED_ARM=sd SEEDS="1 2 3" SEED_SHARE=0.3 SEED_CONDS="no_memory,handwritten --config.env.workers=5 --config.sft.play_contrast=True --config.sft.steps=0 --config.rollout.retrieval_fields=name,description" PLAY_STEPS=360 SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh launch LEFT 60
