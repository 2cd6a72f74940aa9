# Campaign 4 (2026-12-01d), one H200 lease, from the repo root (each line one device call).
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/reader_bound.sh kit             # x9, carry .dkq1 ... .dkq9 (the Qwen GGUF parts)
ARMSET=qwen EVAL_RESERVE=480 bash benchmarks/device/learning.sh launch 1690 150   # carry .dk3
ARMSET=qwen bash benchmarks/device/learning.sh wait 200
ARMSET=qwen bash benchmarks/device/learning.sh wait 420
pkill -f "[r]uns/skillos_qrl"; pkill -f "[r]uns/alpha_qrl"; ARMSET=qwen bash benchmarks/device/learning.sh collect 540
# summary (here): python benchmarks/learning/summarize.py benchmarks/results/learning/campaign_2026-12-01d --out benchmarks/results/learning/campaign_2026-12-01d --date 2026-12-01d
