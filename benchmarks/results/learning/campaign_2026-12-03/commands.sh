# Campaign 8 (2026-12-03): Skill1's three arms alone on one H200 lease (issue 18), with the issue-17
# loop (overlapped play, one prefill per group, reset-plan experts, coarse row buckets on the GPU:
# model.batch_buckets=auto). From the repo root; each line one device call, back to back.
# here, before: ./setup.sh && bash benchmarks/device/build_kit.sh smol minilm experts
#   (experts: planner records of the 200 valid_train games in .dk3/cache, ~7-10 min on 2 cores)
# step size (decision, campaign 2's reading): lr 1e-5 with ONE on-policy update per rollout batch
# (campaign 1: 5e-6 x 1 -> policy did not move in ~20 steps; campaign 2: 1e-5 x 4 mini-batches ->
# distil parse 28/32 -> 7-10/32 and the full arm's play fell); ~2x campaign 1's step, 1/4 of campaign 2's.
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/learning.sh kit                 # carry .dk4 (MiniLM)
ARMSET=skill1 SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.mini_batches=1" SAMPLER_GB=12 bash benchmarks/device/learning.sh launch LEFT 60   # carry .dk3
ARMSET=skill1 bash benchmarks/device/learning.sh wait 540
ARMSET=skill1 bash benchmarks/device/learning.sh collect 540
# summary (here): python benchmarks/learning/summarize.py $C --out $C --date 2026-12-03 > $C/tables.md
#                 python benchmarks/learning/paired_steps.py $C
