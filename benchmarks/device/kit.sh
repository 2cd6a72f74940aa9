# Offline kit on a device machine (source it from the repo root). What the device image lacks
# travels in git-ignored folders, one per call (each under the 64 MiB tree limit), and is
# merged into /tmp/dk, which outlives a call while the machine stays warm. Build them here with
# `bash benchmarks/device/build_kit.sh [smol] [qwen] [minilm] [experts]` (its header lists each):
#   .dk1: whl/ (grain, dm-tree, ml_collections, rank-bm25, textworld, alfworld, gguf, ...) [, gguf.part_0]
#   .dk2: site/ (fast_downward: built from source, so the installed package travels, libdownward.so
#         stripped 33 -> 1.1 MB), alfworld/ (../shared/data/alfworld), whl/ (openai and its
#         dependencies: the served reader's client) [, gguf.part_1]
#   .dk3: site/ (jericho 3.3.1) [, gguf.part_2] [, cache/experts: planner records] [, minilm/: tokenizer, configs]
#   .dk4, .dk7: minilm.part_0, minilm.part_1 (all-MiniLM-L6-v2's fp16 weights in halves; Skill1 only;
#         its tokenizer and configs are in .dk3/minilm)
#   .dk5, .dk6: optional, the XLA programs a previous lease built: `learning.sh collect` brings back
#         jaxcache.tgz.part_* (up to 4 of 15 MiB); `bash benchmarks/device/jaxcache.sh place FILES_AT`
#         puts two in each folder; carry each in its own kit call; unpacked here once all are in
#   .dkq1-.dkq12: the Qwen2.5-Coder-0.5B-Instruct GGUF in 40 MiB parts (`reader_bound.sh kit`)
# The SmolLM2-135M-Instruct Q4_1 GGUF (md5 a1231443440b107ff29f02bdb38c9d0a) is split in 3.
K=/tmp/dk
mkdir -p $K/cache
for d in .dk1 .dk2 .dk3 .dk4 .dk5 .dk6 .dk7; do   # once per folder and warm machine (a second copy could race a reader)
  if [ -d $d ] && [ ! -f $K/copied$d ]; then cp -r $d/. $K/ && touch $K/copied$d; fi
done
bash benchmarks/device/jaxcache.sh unpack $K   # .dk5 + .dk6: a previous lease's programs
if [ ! -s $K/minilm/model.safetensors ] && [ -f $K/minilm.part_0 ] && [ -f $K/minilm.part_1 ]; then
  mkdir -p $K/minilm && cat $K/minilm.part_0 $K/minilm.part_1 > $K/minilm/model.safetensors
fi
if [ ! -s $K/smollm2.gguf ] && [ -f $K/gguf.part_0 ] && [ -f $K/gguf.part_1 ] && [ -f $K/gguf.part_2 ]; then
  cat $K/gguf.part_0 $K/gguf.part_1 $K/gguf.part_2 > $K/smollm2.gguf
  echo "gguf md5 $(md5sum < $K/smollm2.gguf)"
fi
if [ -d $K/whl ]; then   # the wheels not installed yet (a later folder may bring more: .dk2/whl)
  new=$(comm -23 <(ls $K/whl | sort) <(sort /tmp/site/.installed 2>/dev/null))
  if [ -n "$new" ]; then
    (cd $K/whl && python3 -m pip install -q --no-index --no-deps --target /tmp/site $new) && ls $K/whl | sort > /tmp/site/.installed
  fi
  [ -d $K/site ] && [ ! -f /tmp/site/.site_copied ] && cp -r $K/site/. /tmp/site/ && touch /tmp/site/.site_copied
fi
# packages built from source here (py3-none-any with a compiled library inside): fast_downward
# (.dk1/site), jericho 3.3.1 (.dk3/site; PyPI's 3.2.0 wheel lacks what textworld 1.7 imports)
[ -d .dk3/site ] && cp -r .dk3/site/. /tmp/site/
export PYTHONPATH=/tmp/site:$PWD SKILLAX_SMOLLM2_GGUF=$K/smollm2.gguf SKILLAX_MINILM_PATH=$K/minilm \
  SKILLAX_ALFWORLD_DATA=$K/alfworld SKILLAX_CACHE=$K/cache HF_HUB_OFFLINE=1 XLA_PYTHON_CLIENT_PREALLOCATE=false \
  JAX_COMPILATION_CACHE_DIR=$K/jaxcache NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
