#!/bin/bash
# Method runs on the device machine (SmolLM2-135M-Instruct policy, ALFWorld), each under a
# wall-clock timeout; results (checkpoints excluded) tarred into $OUT. From the repo root:
#   bash benchmarks/device/methods.sh prefetch  planner records of the 200 valid_train games
#                                               (-> $OUT/expert_cache.tgz, carry it as .dk3/cache)
#   bash benchmarks/device/methods.sh all       together: Skill1 on both GPUs (mesh (1,-1,1)),
#       SkillOS on GPU 0, Skill-alpha on GPU 1; then Skill1's checkpoint restored on one GPU
source benchmarks/device/kit.sh
part=$1; O=/tmp/o_$part; rm -rf $O; mkdir -p $O/runs
export SKILLAX_RESULTS=$O/res
if [ "$part" = prefetch ]; then
  timeout ${PREFETCH_TIMEOUT:-400} python3 -m skillax.agents.envs.prefetch --splits valid_train --workers 28 \
    > $O/prefetch.log 2>&1
  tar czf $OUT/expert_cache.tgz -C $SKILLAX_CACHE experts
  runs=""
else
  ( timeout ${SKILL1_TIMEOUT:-450} python3 -m skillax.main --config configs/skill1_alfworld_gpu.py \
      --workdir /tmp/runs/skill1 --config.max_train_minutes=${SKILL1_MINUTES:-2.5} > $O/skill1.log 2>&1
    echo "skill1 rc=$?" >> $O/skill1.log
    timeout 90 python3 benchmarks/cross_mesh_restore.py --config configs/skill1_alfworld_gpu.py \
      --workdir /tmp/runs/skill1 --meshes 1,-1,1 none > $O/restore.log 2>&1
    echo "restore rc=$?" >> $O/restore.log ) &
  ( CUDA_VISIBLE_DEVICES=0 timeout ${SKILLOS_TIMEOUT:-540} python3 -m skillax.main \
      --config configs/skillos_alfworld_gpu.py --workdir /tmp/runs/skillos > $O/skillos.log 2>&1
    echo "skillos rc=$?" >> $O/skillos.log ) &
  ( CUDA_VISIBLE_DEVICES=1 timeout ${ALPHA_TIMEOUT:-540} python3 -m skillax.main \
      --config configs/skill_alpha_alfworld_gpu.py --workdir /tmp/runs/skill_alpha > $O/skill_alpha.log 2>&1
    echo "skill_alpha rc=$?" >> $O/skill_alpha.log ) &
  wait
  runs="skill1 skillos skill_alpha"
fi
for r in $runs; do [ -d /tmp/runs/$r ] && cp -r /tmp/runs/$r $O/runs/; rm -rf $O/runs/$r/checkpoints; done
tar czf $OUT/$part.tgz -C $O .
tail -n 12 $O/*.log | cut -c1-400
