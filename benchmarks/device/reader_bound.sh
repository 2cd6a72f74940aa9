#!/bin/bash
# The served reader's kit (campaign 3 of issue 18, `ARMSET=reader bash benchmarks/device/learning.sh`):
# the Qwen2.5-Coder-0.5B-Instruct GGUF (469 MiB; sha256 in skillax.models.gguf_assets) travels in 12
# parts of 40 MiB, one device call each (a call carries <= 64 MiB with the tracked tree, 17.7 MiB on
# 2026-12-04; 44 MiB parts left 2.3 MiB), after the learning kit's .dk1 and .dk2 calls and before the
# launch call (carry .dk3), which joins them, checks the sha256 and starts the server.
#
#   bash benchmarks/device/reader_bound.sh prep    HERE: split the GGUF into .dkq1..12 (git-ignored)
#   bash benchmarks/device/reader_bound.sh kit     device calls: carry .dkq<i>, one per call
# Run each as `bash ... > /tmp/x.txt 2>&1; tail /tmp/x.txt`. The calls must follow one another
# within 30 s (the machine is given back when idle, and /tmp/dk with it).
set -u
part=${1:?prep | kit}
if [ "$part" = prep ]; then
  src=$(.venv/bin/python -c "from skillax.models import gguf_assets as g; print(g.qwen25_coder_gguf_path())")
  rm -rf .dkq*; tmp=$(mktemp -d); split -b 40M -d -a 2 "$src" $tmp/qwen.part_
  for f in $tmp/qwen.part_*; do i=${f##*_}; mkdir -p .dkq$((10#$i + 1)); mv $f .dkq$((10#$i + 1))/; done
  grep -qx '/.dkq\*/' .git/info/exclude || echo '/.dkq*/' >> .git/info/exclude
  ls -d .dkq*
elif [ "$part" = kit ]; then
  source benchmarks/device/kit.sh
  for d in .dkq*; do [ -d $d ] && cp $d/* $K/ && echo "copied $d"; done; ls -la $K/qwen.part_* 2>/dev/null | wc -l
else
  echo "usage: reader_bound.sh prep | kit"; exit 2
fi
