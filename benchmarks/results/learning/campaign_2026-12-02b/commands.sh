# Campaign 6 (2026-12-02b), one H200 lease, from the repo root (each line one device call).
# here, before (a fresh checkout has no kit; build_kit.sh did not exist yet, the same steps by hand):
#   ./setup.sh && bash benchmarks/device/build_kit.sh qwen experts
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/reader_bound.sh kit             # x9, carry .dkq1 ... .dkq9 (the Qwen GGUF parts)
# planned launch (carry .dk3 + dm-tree; four arms planned 120 uncached games each for 10 min, then stopped):
#   ARMSET=search SEEDS="1 2 3" SEED_SHARE=0.18 SEED_CONDS=no_memory,handwritten,curated PLAY_STEPS=240 SKIP="skillos_ssft skillos_srl" bash benchmarks/device/learning.sh launch 1560 90
# what produced the results (after pkill of the four arms):
ARMSET=search SEEDS="2 3" SEED_SHARE=0.3 SEED_CONDS="no_memory,handwritten --config.eval.splits=valid_unseen --config.env.workers=8" PLAY_STEPS=240 SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh launch 900 60
ARMSET=search SEEDS="2 3" SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh wait 400
ARMSET=search SEEDS="2 3" SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh collect 415
# summary (here): python benchmarks/learning/summarize.py benchmarks/results/learning/campaign_2026-12-02b --out benchmarks/results/learning/campaign_2026-12-02b --date 2026-12-02b > tables.md
#                 python benchmarks/learning/pool_seeds.py --date 2026-12-02b --write
# next lease (prepared): the contrast lever over 3 seeds, bound + SFT curator's repo, both splits:
#   bash benchmarks/device/build_kit.sh qwen experts   (here)
#   ARMSET=search SEEDS="1 2 3" SEED_SHARE=0.3 SEED_CONDS="no_memory,handwritten --config.sft.play_contrast=True" PLAY_STEPS=360 SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh launch LEFT 60
