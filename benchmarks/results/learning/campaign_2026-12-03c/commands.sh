# Campaign 10 (2026-12-03c): Skill1 seeds 2 and 3 at campaign 9's setting, and the reader bound
# (issue 18). Same setting as campaign 9 (KL 0.05 k3 to the warm start, lr 1e-5, one update per
# rollout batch); seeds 2 and 3 instead of a third run of seed 0 (SKIP), so campaigns 9 + 10 hold
# seeds 0-3 of one setting. The bound arm skill1_hw: the shared warm start with the six
# hand-written skills in Skill1's format as its library (no RL).
# here, before: ./setup.sh && bash benchmarks/device/build_kit.sh smol minilm experts
# From the repo root at commit 2f75188 + the learning.sh SKIP-aware memory split of this commit;
# each line one device call, back to back (the lease is released 30 s idle).
bash benchmarks/device/learning.sh kit                 # carry .dk1
bash benchmarks/device/learning.sh kit                 # carry .dk2
bash benchmarks/device/learning.sh kit                 # carry .dk4 (MiniLM)
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS="2 3" SKIP="skill1_grpo skill1_full" SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.mini_batches=1 --config.rl.kl_coef=0.05 --config.rl.kl_estimator=k3" SAMPLER_GB=8 EVAL_RESERVE=480 bash benchmarks/device/learning.sh launch 1640 60   # carry .dk3
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS="2 3" SKIP="skill1_grpo skill1_full" bash benchmarks/device/learning.sh wait 500
# skill1_hw died of OOM at 0.07 of the GPU with the 8 GB sampler budget (skill1_hw_oom.log in the
# snapshot); restarted by hand at 0.11, a 4 GB budget, 5 workers, with_library only (its pair is
# the SFT arm's without_library eval of the same weights); learning.sh now starts it this way:
L=/tmp/L; sed -e 's/MEM_FRACTION=0.07/MEM_FRACTION=0.11/' -e 's/sampler_memory_gb=8/sampler_memory_gb=4 --config.eval.ablate_retrieval=False/' -e 's/env.workers=3/env.workers=5/' $L/logs/skill1_hw.sh > $L/logs/skill1_hw_r.sh; mv $L/logs/skill1_hw.log $L/logs/skill1_hw_oom.log; cp $L/logs/skill1_hw_r.sh $L/logs/skill1_hw.sh
source benchmarks/device/kit.sh; export OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1; rm -rf /tmp/L/runs/skill1_hw; setsid nohup bash /tmp/L/logs/skill1_hw.sh > /dev/null 2>&1 < /dev/null &
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS="2 3" SKIP="skill1_grpo skill1_full" bash benchmarks/device/learning.sh wait 500
ARMSET=skill1 SKILL1_BOUND=1 SKILL1_SEEDS="2 3" SKIP="skill1_grpo skill1_full" bash benchmarks/device/learning.sh collect 370
# summary (here; C=benchmarks/results/learning/campaign_2026-12-03c):
#   python benchmarks/learning/summarize.py $C --out $C --date 2026-12-03c > $C/tables.md
#   (python benchmarks/learning/skill_match.py $C/skill1_full2 $C/skill1_full3;
#    python benchmarks/learning/skill_match.py $C/skill1_hw --without $C/skill1_sft) > $C/skill_match.md
#   python benchmarks/learning/paired_steps.py $C --baseline without_library --arm with_library --out $C/steps.jsonl
#   appended $C/summary.jsonl to ../summary.jsonl, then pooled seeds 0-3 (campaigns 9 + 10) per comparison P:
#   python benchmarks/learning/pool_seeds.py --pattern "^(seed \d+, )?P$" \
#     --name "KL 0.05 setting (campaigns 9+10), seeds 0-3 pooled: P" --date 2026-12-03c --write
#   and over every Skill1 run (--by run; names "Skill1 runs of campaigns 1-10 / 2-10 pooled ...").
