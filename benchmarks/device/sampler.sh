#!/bin/bash
# Issue 3 on one H200: the decode step's variants, each in its own process, with a kernel
# profile (benchmarks/kernel_profile.py) of one call.
#   bash benchmarks/device/sampler.sh variants  -> $OUT/sampler_variants.tgz
#   bash benchmarks/device/sampler.sh flags     -> $OUT/sampler_flags.tgz (cuBLAS instead of Triton GEMMs)
#   bash benchmarks/device/sampler.sh pallas    -> $OUT/sampler_pallas.tgz (cache-attention kernel:
#                                                GPU tests; sampler with it, 256 and 1024-token prompts)
#   bash benchmarks/device/sampler.sh update    -> GPU tests + 8B b64 / b1, 0.6B b64 (shipped defaults)
#   bash benchmarks/device/sampler.sh sweep     -> decode-attention tile sweep
#   bash benchmarks/device/sampler.sh final8b64 / final  -> the shipped program beside
#                                                transformers' eager and static-cache generate
# variants: Qwen3-8B b64 / b1 and 0.6B b64, 256 -> 256 at T = 1: shipped (fused qkv and
# gate-up, no lax.cond in the loop) vs unfused, and with XLA's command buffers (CUDA graphs)
# extended to while loops and conditionals ($CB).
# Needs no wheels (jax, transformers and torch are on the device image).
part=${1:-variants}; O=/tmp/o_s_$part; rm -rf $O; mkdir -p $O/res $O/log
export SKILLAX_RESULTS=$O/res PYTHONPATH=$PWD XLA_PYTHON_CLIENT_PREALLOCATE=false HF_HUB_OFFLINE=1 \
  JAX_COMPILATION_CACHE_DIR=/tmp/jcache
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $O/log/gpu.txt 2>&1
S="python3 benchmarks/sampling.py --prompt-len 256 --new-tokens 256"
CB="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE"
run() { local name=$1 t=$2; shift 2; echo "== $name $(date +%T)"; timeout $t "$@" > $O/log/$name.txt 2>&1; echo "rc $?"; }
if [ "$part" = variants ]; then
  run 8b64 100 $S --model qwen3-8b --batch 64 --reference none --profile
  XLA_FLAGS=$CB run 8b64_cb 100 $S --model qwen3-8b --batch 64 --reference none --profile
  run 8b1 90 $S --model qwen3-8b --batch 1 --reference none --profile
  XLA_FLAGS=$CB run 8b1_cb 90 $S --model qwen3-8b --batch 1 --reference none --profile
  run 8b64_nofuse 90 $S --model qwen3-8b --batch 64 --reference none --fuse 0
  run 06b64 60 $S --model qwen3-0.6b --batch 64 --reference none --profile
  XLA_FLAGS=$CB run 06b64_cb 60 $S --model qwen3-0.6b --batch 64 --reference none
elif [ "$part" = flags ]; then
  NT="--xla xla_gpu_enable_triton_gemm=false"
  run 8b64_nt 100 $S --model qwen3-8b --batch 64 --reference none --profile $NT
  run 8b1_nt 90 $S --model qwen3-8b --batch 1 --reference none --profile $NT
  XLA_FLAGS=$CB run 8b64_nt_cb 100 $S --model qwen3-8b --batch 64 --reference none $NT
  XLA_FLAGS=$CB run 8b1_nt_cb 90 $S --model qwen3-8b --batch 1 --reference none $NT
  run 06b64_nt 60 $S --model qwen3-0.6b --batch 64 --reference none --profile $NT
elif [ "$part" = pallas ]; then      # the Pallas decode-attention kernel (filled slots only)
  python3 -m pytest -q -p no:cacheprovider tests/models/test_cache_attention.py \
    tests/models/test_cache_and_sharding.py -k "not sharded" > $O/log/pytest.txt 2>&1
  echo "pytest rc $?"
  run 8b64_pallas 110 $S --model qwen3-8b --batch 64 --reference none --cache-attn pallas --profile
  run 8b1_pallas 90 $S --model qwen3-8b --batch 1 --reference none --cache-attn pallas
  run 06b64_pallas 60 $S --model qwen3-0.6b --batch 64 --reference none --cache-attn pallas
  L="python3 benchmarks/sampling.py --new-tokens 256 --model qwen3-8b --batch 64 --reference none --repeats 2"
  run 8b64_p1024_pallas 120 $L --prompt-len 1024 --cache-attn pallas
  run 8b64_p1024_xla 120 $L --prompt-len 1024 --cache-attn xla
  run 8b64_p2048_pallas 150 $L --prompt-len 2048 --cache-attn pallas   # xla: a 125 GiB allocation
elif [ "$part" = update ]; then      # GPU kernel tests + the three issue shapes, shipped defaults
  python3 -m pytest -q -p no:cacheprovider tests/models/test_cache_attention.py > $O/log/pytest.txt 2>&1
  echo "pytest rc $?"
  run 8b64 110 $S --model qwen3-8b --batch 64 --reference none --profile
  run 8b1 90 $S --model qwen3-8b --batch 1 --reference none
  run 06b64 60 $S --model qwen3-0.6b --batch 64 --reference none
elif [ "$part" = sweep ]; then       # decode-step attention tiles (benchmarks/decode_attention.py)
  A="python3 benchmarks/decode_attention.py --model qwen3-8b"
  run att_8b64 300 $A --batch 64 --slots 512 --filled 384 --block-k 16,32,64 --warps 2,4 --stages 2,3,4 --splits 0,2 --iters 30
  run att_8b64_long 120 $A --batch 64 --slots 4096 --filled 2304 --block-k 32,64 --warps 4 --stages 2,3,4
  run att_8b8 60 $A --batch 8 --slots 2048 --filled 1500 --block-k 32,64 --warps 4 --stages 2,3
elif [ "$part" = final8b64 ]; then   # the shipped program beside transformers
  run 8b64_ref 560 $S --model qwen3-8b --batch 64 --reference eager,static
else                                 # static-cache (compiled) transformers only
  run 8b64_static 200 $S --model qwen3-8b --batch 64 --reference static --repeats 2
  run 8b1_static 200 $S --model qwen3-8b --batch 1 --reference static --repeats 2
  run 06b64_static 150 $S --model qwen3-0.6b --batch 64 --reference static --repeats 2
fi
tar czf $OUT/sampler_$part.tgz -C $O res log
for f in $O/log/*.txt; do echo "--- $f"; grep -v "^{\"wall_s" $f | tail -n 3 | cut -c1-900; done
