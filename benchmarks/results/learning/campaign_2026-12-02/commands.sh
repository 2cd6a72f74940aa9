# Campaign 5 (2026-12-02), one H200 lease, from the repo root (each line one device call).
# here, before: SKILLAX_CACHE=... python benchmarks/learning/write_teacher_skills.py     # teacher_skills/
#               SKILLAX_CACHE=... python benchmarks/learning/search_oracle.py benchmarks/results/learning/campaign_2026-12-02/search_oracle.jsonl
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/reader_bound.sh kit             # x9, carry .dkq1 ... .dkq9 (the Qwen GGUF parts)
ARMSET=search EVAL_RESERVE=600 PLAY_STEPS=240 bash benchmarks/device/learning.sh launch 1645 150   # carry .dk3
ARMSET=search bash benchmarks/device/learning.sh wait 240
ARMSET=search bash benchmarks/device/learning.sh wait 420
pkill -f "[r]uns/skillos_srl"; ARMSET=search bash benchmarks/device/learning.sh wait 200
ARMSET=search bash benchmarks/device/learning.sh collect 420
# summary (here): python benchmarks/learning/summarize.py benchmarks/results/learning/campaign_2026-12-02 --out benchmarks/results/learning/campaign_2026-12-02 --date 2026-12-02
