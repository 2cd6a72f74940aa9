# Campaign 7 (2026-12-02c), one H200 lease, from the repo root (each line one device call).
# here, before: ./setup.sh && bash benchmarks/device/build_kit.sh qwen experts
#   (this lease: the kit of the previous session, 88 of 200 planner records; PREFETCH=14 planned the rest on the device)
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/reader_bound.sh kit             # carry .dk2 + .dkq9 (kit.sh copies .dk2 too)
bash benchmarks/device/reader_bound.sh kit             # x8, carry .dkq1 ... .dkq8 (the Qwen GGUF parts)
PREFETCH=14 ARMSET=search SEEDS="1 2 3" SEED_SHARE=0.3 SEED_CONDS="no_memory,handwritten --config.eval.splits=valid_unseen --config.env.workers=5 --config.sft.play_contrast=True --config.sft.steps=0" PLAY_STEPS=360 SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh launch LEFT 60   # carry .dk3
ARMSET=search SEEDS="1 2 3" SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh wait 540
ARMSET=search SEEDS="1 2 3" SKIP="skillos_ssft skillos_srl alpha_ssft" bash benchmarks/device/learning.sh collect 540
