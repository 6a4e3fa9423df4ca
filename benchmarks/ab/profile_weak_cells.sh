#!/usr/bin/env bash
# One device call that profiles, per SASS instruction, one launch of the kernel behind each of
# the weakest cells against the issues' targets. It writes one ncu source-page CSV per cell
# under $OUT, to be read here with benchmarks/ncu_sass.py. Session 17 found the Hopper GEMM's
# epilogue cost this way.
# Staging: scripts/gpu-check.sh --build-only && rm -rf .device/model
# then  run(command="bash benchmarks/ab/profile_weak_cells.sh", carry=[".device"]).
# Each profile is one launch after the benchmark's warm-up calls, with ncu's --clock-control none
# (METHOD.md) and its default cache flush. Expect about 15-30 s a cell; the cells run in the
# order below, and each stops after 90 s.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
# Issue 7: bf16 at K = 1024 (0.93x cuBLAS after the lean epilogue) and 4096 x 12288 x 4096
# (0.91x); the sm80-class kernel at K = 1024 (0.45x, target 0.6).
sass_profile gemm_bf16_k1024 gemm_sm90 2 python3 benchmarks/gemm.py --lib "$LIB" --profile 8192 8192 1024
sass_profile gemm_bf16_4096x12288 gemm_sm90 2 python3 benchmarks/gemm.py --lib "$LIB" \
  --profile 4096 12288 4096
sass_profile gemm_sm80_k1024 gemm_kernel 2 python3 benchmarks/gemm.py --lib "$LIB" --family sm80 \
  --profile 8192 8192 1024
# Issue 6: head_dim 64, causal, seqlen 512 (0.73x cuDNN; batch 32, 32 heads).
# (--no-anchors: the script's warm-up and timed calls are the kernel's only launches.)
sass_profile attn_hd64_causal_512 attention_sm90 2 python3 benchmarks/attention.py --lib .device/lib \
  --family sm90 --head-dims 64 --seqlens 512 --causal 1 --no-anchors --no-extra --warmup 2 --reps 1
# Issue 8: Monarch n = 4096 (64 blocks), 16384 tokens (39% of copy bandwidth, target 80%), and
# the FFT convolution at L = 1K (6x torch, target 12x).
sass_profile monarch_4096 monarch_cluster 2 python3 benchmarks/monarch.py --lib "$LIB" --n 4096 \
  --tokens 16384 --no-dense --quick --warmup 1 --reps 1
sass_profile fftconv_1k conv_reg 2 python3 benchmarks/fftconv.py --lib "$LIB" --seqlens 1024 \
  --warmup 1 --reps 1
ls -la "$OUT"
