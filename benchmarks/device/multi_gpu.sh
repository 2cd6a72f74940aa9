#!/bin/bash
# Issue 10 on nvidia-h200-x2 (plus the shipped sampler's single-GPU timing for issue 3).
#   bash benchmarks/device/multi_gpu.sh train     -> $OUT/multi_gpu_train.tgz
#   bash benchmarks/device/multi_gpu.sh sampling  -> $OUT/multi_gpu_sampling.tgz
#   bash benchmarks/device/multi_gpu.sh meshes    -> the 2-GPU train steps only, plus the full
#                                                   36-layer Qwen3-8B on (1,2,1)
# train: a Qwen3-8B-wide model (12 of its 36 layers, so that its fp32 master + Adam state,
# 57 GB, fits one GPU and the single-GPU baseline exists) on 1 GPU and on (1,2,1) fsdp,
# (2,1,1) data and (1,1,2) tensor meshes at a fixed 4 x 2048 tokens per GPU (weak scaling),
# beside a 1.7B single-GPU step (issue 4's MFU). sampling: Qwen3-8B / 0.6B on 1 GPU, 8B on 2.
source benchmarks/device/kit.sh
part=$1; O=/tmp/o_$part; rm -rf $O; mkdir -p $O/res $O/log
export SKILLAX_RESULTS=$O/res
nvidia-smi --query-gpu=name,memory.total --format=csv > $O/log/gpus.txt 2>&1
T="python3 benchmarks/train_step.py --seq 2048 --attn cudnn --no-reference"
if [ "$part" = meshes ]; then
  for m in 1,2,1 2,1,1 1,1,2; do
    timeout 140 $T --shape qwen3-8b --layers 12 --batch 8 --devices 2 --mesh $m > $O/log/t8_2gpu_$m.txt 2>&1
  done
  timeout 180 $T --shape qwen3-8b --batch 8 --devices 2 --mesh 1,2,1 > $O/log/t8full_2gpu_1,2,1.txt 2>&1
elif [ "$part" = train ]; then
  ( CUDA_VISIBLE_DEVICES=0 timeout 150 $T --shape qwen3-8b --layers 12 --batch 4 --devices 1 ) > $O/log/t8_1gpu.txt 2>&1 &
  ( CUDA_VISIBLE_DEVICES=1 timeout 150 $T --shape qwen3-1.7b --batch 8 --chunk 1024 --devices 1 ) > $O/log/t17_1gpu.txt 2>&1
  wait
  for m in 1,2,1 2,1,1 1,1,2; do
    timeout 140 $T --shape qwen3-8b --layers 12 --batch 8 --devices 2 --mesh $m > $O/log/t8_2gpu_$m.txt 2>&1 \
      || timeout 140 $T --shape qwen3-8b --layers 12 --batch 8 --devices 2 --mesh $m --attn xla >> $O/log/t8_2gpu_$m.txt 2>&1
  done
else
  S="python3 benchmarks/sampling.py --prompt-len 256 --new-tokens 256"
  ( export CUDA_VISIBLE_DEVICES=0
    timeout 150 $S --model qwen3-8b --batch 64 --reference eager
    timeout 60 $S --model qwen3-8b --batch 1 --reference none ) > $O/log/s_8b_1gpu.txt 2>&1 &
  ( export CUDA_VISIBLE_DEVICES=1
    timeout 100 $S --model qwen3-0.6b --batch 64 --reference eager ) > $O/log/s_06b_1gpu.txt 2>&1
  wait
  for m in 1,1,2 2,1,1; do
    timeout 100 $S --model qwen3-8b --batch 64 --devices 2 --mesh $m --reference none > $O/log/s_8b_2gpu_$m.txt 2>&1
  done
fi
tar czf $OUT/multi_gpu_$part.tgz -C $O res log
tail -n 2 $O/log/*.txt | cut -c1-700
