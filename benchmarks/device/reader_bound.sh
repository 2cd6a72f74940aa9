#!/bin/bash
# Reader upper bound (issue 18, next step of campaign 2): does a hand-written, correct skill help
# a ZERO-SHOT instruct reader? Campaign 2 measured the bound for the play-SFT'd SmolLM2-135M
# readers at ~0 (SkillOS executor) and < 0 (Skill-alpha worker); this measures it for
# Qwen2.5-Coder-0.5B-Instruct served by `mode=serve` on the GPU and used as SkillOS's frozen
# executor (`executor.kind=openai`, the path of tests/methods/test_served_worker.py), eval only
# (steps 0, no SFT), conditions no_memory vs handwritten on all 134 valid_unseen + 140
# valid_seen games. Summarise with benchmarks/learning/summarize.py on $R/runs (the arm is
# skillos_reader; its comparison "zero-shot served reader: hand-written skills - No Memory").
#
#   bash benchmarks/device/reader_bound.sh prep          HERE: split the Qwen GGUF into .dkq1..9 (55 MiB each)
#   bash benchmarks/device/reader_bound.sh kit           device calls: carry .dkq<i> (one per call;
#                                                        the learning kit's .dk1-.dk3 first)
#   bash benchmarks/device/reader_bound.sh launch [S]    assemble + sha256 check, start the server
#                                                        and the evaluation (detached), sleep S
#   bash benchmarks/device/reader_bound.sh wait S        sleep until done or S s, status, $OUT snapshot
# Run each as `bash ... > /tmp/x.txt 2>&1; tail /tmp/x.txt` (never pipe into tail: detached children).
# DRY=1 (CPU, this repo's .venv): DRY_MODEL = a tiny HF chat model folder is served instead, on
# 4 games per split, to check the orchestration before device time is spent (checked 2026-12-01:
# 16 records, 2 conditions x 2 splits, rc 0, with a random 2-layer Qwen2 served on CPU).
set -u
part=${1:?prep | kit | launch | wait}
R=${R:-/tmp/R}
HW=benchmarks/learning/handwritten_skills
if [ "$part" = prep ]; then
  src=$(.venv/bin/python -c "from skillax.models import gguf_assets as g; print(g.qwen25_coder_gguf_path())")
  rm -rf .dkq*; tmp=$(mktemp -d); split -b 55M -d -a 1 "$src" $tmp/qwen.part_
  for f in $tmp/qwen.part_*; do i=${f##*_}; mkdir -p .dkq$((i + 1)); mv $f .dkq$((i + 1))/; done
  grep -qx '/.dkq\*/' .git/info/exclude || echo '/.dkq*/' >> .git/info/exclude
  ls -d .dkq*; exit 0
fi
if [ "${DRY:-0}" = 1 ]; then
  export PATH=$PWD/.venv/bin:$PATH OUT=${OUT:-/tmp/R_out} HF_HUB_OFFLINE=1 JAX_PLATFORMS=cpu
  export SKILLAX_ALFWORLD_DATA=${SKILLAX_ALFWORLD_DATA:-$(cd .. && pwd)/shared/data/alfworld}
  MODEL=${DRY_MODEL:?a tiny HF chat model folder}; GAMES="--config.env.n_eval_tasks=4"
else
  source benchmarks/device/kit.sh
  MODEL=qwen2.5-coder-0.5b; GAMES=""
fi
export OMP_NUM_THREADS=2 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
mkdir -p $R/logs $OUT
status() {
  echo "== $(date -u +%T)"; grep -h '"url"' $R/logs/serve.log 2>/dev/null | tail -1
  grep -v '^[IW][0-9]\{4\} ' $R/logs/bound.log 2>/dev/null | tr '\r' '\n' | grep -v '^\s*$' | tail -n 4 | cut -c1-300
  ls $R/runs/skillos_reader/eval 2>/dev/null; grep -h '^rc=' $R/logs/bound.log 2>/dev/null; uptime
}
snapshot() {
  tar czf $OUT/reader.tgz.tmp -C $R --exclude=checkpoints --exclude=frozen logs runs 2>/dev/null
  mv $OUT/reader.tgz.tmp $OUT/reader.tgz; ls -la $OUT/reader.tgz | awk '{print "snapshot bytes", $5}'
}
if [ "$part" = kit ]; then
  for d in .dkq*; do [ -d $d ] && cp $d/* $K/ && echo "copied $d"; done; ls -la $K/qwen.part_* 2>/dev/null | wc -l
elif [ "$part" = launch ]; then
  if [ "${DRY:-0}" != 1 ]; then
    cat $K/qwen.part_* > $K/qwen.gguf
    QSHA=$(python3 -c "from skillax.models.gguf_assets import QWEN25_CODER_SHA256 as s; print(s)")
    got=$(sha256sum < $K/qwen.gguf | cut -d' ' -f1); echo "qwen gguf sha256 $got"
    [ "$got" = "$QSHA" ] || { echo "sha256 mismatch (expected $QSHA): missing kit parts?"; exit 1; }
    export SKILLAX_QWEN25_GGUF=$K/qwen.gguf
  fi
  mkdir -p $R/src && tar cf - --exclude='./.dk*' --exclude=./.git --exclude=./.venv . | tar xf - -C $R/src
  cd $R/src
  # the server: its own GPU share (0.30 of the H200), batches up to 256 rows of concurrent requests
  { [ "${DRY:-0}" = 1 ] || echo "export XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.30"
    printf 'cd %q; export PYTHONPATH=/tmp/site:%q; python3 -m skillax.main --config configs/serve.py ' "$PWD" "$PWD"
    printf -- '--config.model.path=%q --config.model.max_len=4096 --config.serve.port=8765 ' "$MODEL"
    printf -- '--config.serve.model_name=reader --config.serve.max_batch_rows=256 --config.serve.max_queue=1024 '
    printf -- '--config.serve.default_max_tokens=128 > %q 2>&1\n' "$R/logs/serve.log"
  } > $R/logs/serve.sh
  setsid nohup bash $R/logs/serve.sh > /dev/null 2>&1 < /dev/null &
  for _ in $(seq 1 120); do grep -q '"url"' $R/logs/serve.log 2>/dev/null && break; sleep 2; done
  grep '"url"' $R/logs/serve.log || { echo "server did not start"; tail -20 $R/logs/serve.log; exit 1; }
  # the evaluation: no curator, no SFT, the served model as the frozen executor
  { echo "cd $PWD; export PYTHONPATH=/tmp/site:$PWD JAX_PLATFORMS=cpu"
    printf 'python3 -m skillax.main --config configs/skillos_alfworld_learning.py --workdir %q ' "$R/runs/skillos_reader"
    printf -- '--config.steps=0 --config.sft.steps=0 --config.sft.play_steps=0 --config.eval.conditions=no_memory,handwritten '
    printf -- '--config.eval.handwritten_dir=%q --config.executor.kind=openai ' "$HW"
    printf -- '--config.executor.openai.base_url=http://127.0.0.1:8765/v1 --config.executor.openai.model=reader '
    printf -- '--config.executor.openai.max_concurrency=256 --config.executor.openai.timeout_s=300 --config.env.workers=12 %s ' "$GAMES"
    printf '> %q 2>&1\necho rc=$? >> %q\n' "$R/logs/bound.log" "$R/logs/bound.log"
  } > $R/logs/bound.sh
  setsid nohup bash $R/logs/bound.sh > /dev/null 2>&1 < /dev/null &
  sleep ${2:-60}; status; snapshot
elif [ "$part" = wait ]; then
  t_end=$(( $(date +%s) + ${2:-500} ))
  while [ $(date +%s) -lt $t_end ] && ! grep -q '^rc=' $R/logs/bound.log 2>/dev/null; do sleep 15; done
  grep -q '^rc=' $R/logs/bound.log 2>/dev/null && pkill -f "serve.port=8765"   # evaluation over: stop the server
  status; snapshot
else
  echo "usage: reader_bound.sh prep | kit | launch [S] | wait S"; exit 2
fi
