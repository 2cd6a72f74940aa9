#!/bin/bash
# Issue 17 on one H200: the acceptance figures, one process at a time (each alone on the GPU),
# detached so that the run outlives a call (<= 10 min) while the machine is held.
#   kit calls first (learning.sh's order): run(carry=[".dk1"], "bash benchmarks/device/rl_loop.sh kit"),
#   then .dk2, then .dk4 and .dk7 (MiniLM in halves: Skill1's retrieval encoder), then
#   run(carry=[".dk3"], "bash benchmarks/device/rl_loop.sh launch")   -> starts the queue below
#   bash benchmarks/device/rl_loop.sh wait 540      -> waits (<= S s or the queue's end), prints the tails
#   bash benchmarks/device/rl_loop.sh collect       -> $OUT/rl_loop_h200.tgz (res/*.jsonl, log/)
# Queue, most wanted first (the rest is skipped when a call-side `stop` file appears):
#   1. Skill1 ALFWorld step, SmolLM2, 8 tasks x 4, <= 30 turns, shipped defaults, 2 warm-up steps
#      (the buckets of long histories compile in steps 0-1 on a GPU) + 3 measured
#   2. sampling.py Qwen3-8B x 256 x (1,024 -> 256), 1.7B x 256, 0.6B x 512 (item 3: peak memory
#      beside weights + KV)
#   3. engine Qwen3-8B, 32 prompts x 8 samples x 1,024 tokens, one prefill per group vs not (item 4)
#   4. Skill1 step "before": SKILLAX_FAST_PDDL=0, round-robin placement, no shared prefill, lock-step
# `rl_loop.sh floor [S]`: the same step with the Skill1 defaults (model.batch_floor 32, model.prefill_floor 8)
# and both floors 0, one after the other
# (its 2026-12-07 run, commit 88c5df3, predates model.prefill_floor: benchmarks/results/rl_loop.md).
# `rl_loop.sh extra [S] [T]` (its own queue; on a fresh machine after the kit calls, carrying .dk3):
# the Skill1 ALFWorld step with the update timed on random advantages (an untrained SmolLM2
# wins no game, so every group has zero variance and the engine skips the update), 2 warm-up +
# 5 measured steps, then the TextWorld step.
part=${1:-launch}; O=/tmp/o_rl
if [ "$part" = kit ]; then source benchmarks/device/kit.sh; ls /tmp/dk; exit 0; fi
# start_queue NAME: the queue script from stdin (`run NAME TIMEOUT CMD...` lines), run detached
# from a snapshot of the tree (a later call's tree sync cannot change its code); touches $O/done
start_queue() {
  source benchmarks/device/kit.sh
  rm -f $O/done; mkdir -p $O/res $O/log
  [ -d $O/src ] || { mkdir -p $O/src; tar cf - --exclude='./.dk*' --exclude=./.git --exclude=./.venv . | tar xf - -C $O/src; }
  { echo "cd $O/src; export SKILLAX_RESULTS=$O/res PYTHONPATH=/tmp/site:$O/src"
    echo "run() { local name=\$1 t=\$2; shift 2; [ -f $O/stop ] && { echo \"== \$name skipped\"; return; }"
    echo "  echo \"== \$name \$(date +%T)\"; timeout \$t \"\$@\" > $O/log/\$name.txt 2>&1; echo \"rc \$? \$(date +%T)\"; }"
    cat
    echo "echo \"== $1 done \$(date +%T)\"; touch $O/done"
  } > $O/$1.sh
  XLA_PYTHON_CLIENT_PREALLOCATE=false setsid nohup bash $O/$1.sh >> $O/log/queue.txt 2>&1 < /dev/null &
}
if [ "$part" = launch ]; then
  rm -rf $O
  start_queue queue <<'EOF'
S1="python3 benchmarks/rl_loop.py skill1 --env alfworld --model smollm2 --tasks 8 --group 4 --max-steps 30"
S="python3 benchmarks/sampling.py --reference none --repeats 2 --prompt-len 1024 --new-tokens 256"
E="python3 benchmarks/rl_loop.py engine --model qwen3-8b --episodes 256 --group 8 --turns 2 --prompt-len 1024 --new-tokens 256"
run skill1_after 480 $S1 --workers auto --steps 3 --warmup 2
run s8b256 300 $S --model qwen3-8b --batch 256
run s17b256 200 $S --model qwen3-1.7b --batch 256
run s06b512 200 $S --model qwen3-0.6b --batch 512
run e8b_shared 240 $E --share-prefill 1
run e8b_unshared 240 $E --share-prefill 0
SKILLAX_FAST_PDDL=0 run skill1_before 360 $S1 --workers 8 --placement round_robin --share-prefill 0 --overlap 1 --steps 2 --warmup 1
EOF
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $O/log/gpu.txt 2>&1
  setsid nohup nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 10 > $O/log/gpu.csv 2>&1 < /dev/null &
  sleep ${2:-420}; cat $O/log/queue.txt
elif [ "$part" = extra ]; then   # after the queue (same warm machine): its programs are in the compilation cache
  start_queue extra <<EOF
S1="python3 benchmarks/rl_loop.py skill1 --model smollm2 --tasks 8 --group 4 --max-steps 30 --workers auto"
run skill1_update ${3:-420} \$S1 --env alfworld --steps 5 --warmup 2 --update-advantages random
run skill1_textworld 300 \$S1 --env textworld --steps 3 --warmup 2 --update-advantages random
EOF
  sleep ${2:-300}; cat $O/log/queue.txt
elif [ "$part" = floor ]; then   # `rl_loop.sh floor [S]` (session 27): model.batch_floor = tasks x group (the
  # Skill1 default since) against 0 (before), the update on random advantages, 2 warm-up + 5 measured
  # steps each; the floor run first, so the no-floor run's 8- and 16-row programs are not in the cache
  start_queue floor <<EOF
S1="python3 benchmarks/rl_loop.py skill1 --model smollm2 --tasks 8 --group 4 --max-steps 30 --workers auto --env alfworld --steps 5 --warmup 2 --update-advantages random"
run skill1_floor32 300 \$S1
run skill1_floor0 300 \$S1 --set model.batch_floor=0 --set model.prefill_floor=0
EOF
  sleep ${2:-300}; cat $O/log/queue.txt
elif [ "$part" = ab ]; then      # `rl_loop.sh ab OPTIONS [S]`: the ALFWorld step with model.sampler_xla=OPTIONS,
  source benchmarks/device/kit.sh  # in the foreground (a fresh machine: compare with `extra`'s skill1_update)
  mkdir -p $O/res $O/log
  SKILLAX_RESULTS=$O/res timeout ${3:-240} python3 benchmarks/rl_loop.py skill1 --model smollm2 --tasks 8 --group 4 \
    --max-steps 30 --workers auto --env alfworld --steps 2 --warmup 1 --update-advantages random \
    --set "model.sampler_xla=${2:?xla options}" > ${OUT:-$O/log}/skill1_ab.txt 2>&1; rc=$?; cp ${OUT:-$O/log}/skill1_ab.txt $O/log/ 2>/dev/null
  echo "rc $rc"
elif [ "$part" = wait ]; then
  t_end=$(( $(date +%s) + ${2:-500} ))
  while [ $(date +%s) -lt $t_end ] && [ ! -f $O/done ]; do sleep 10; done
  cat $O/log/queue.txt
elif [ "$part" = stop ]; then
  touch $O/stop; cat $O/log/queue.txt
fi
if [ "$part" != kit ]; then
  for f in $O/log/*.txt; do echo "--- $f"; grep -v '^{"step"' $f | tail -n 3 | cut -c1-1200; done
  grep -h '^{"step"' $O/log/skill1_*.txt 2>/dev/null | cut -c1-400
  [ -n "$OUT" ] && tar czf $OUT/rl_loop_h200.tgz -C $O res log
fi
