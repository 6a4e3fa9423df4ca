#!/usr/bin/env bash
# A/B of branch vtail3 against main in one device call (not yet made). vtail3: varlen work
# tiles whose first key tile runs past the sequence load V before K there, so that the
# consumers' V-tail clear (kernel.cuh, clear_v_tail) does not hold back the first S GEMM
# (RESULTS.md, "Rows past a varlen sequence zeroed": varlen non-causal -4% after the clear).
# Staging here (2 cores; the attention objects rebuild in ~5 min each way):
#   scripts/gpu-check.sh --build-only && rm -rf .device/model          # main, as A
#   tar cf /tmp/attnobj.tar build-gpu/CMakeFiles/flashkit_sm90.dir/src/cuda/attention
#   git checkout vtail3 && cmake --build --preset gpu --target flashkit
#   mkdir -p .device-b && gzip -1c "$(readlink -f build-gpu/libflashkit.so)" > .device-b/lib.so.gz
#   git checkout main && tar xf /tmp/attnobj.tar && touch build-gpu/CMakeFiles/flashkit_sm90.dir/src/cuda/attention/sm90/*.o
# then  run(command="bash benchmarks/ab/vtail3_device.sh", carry=[".device", ".device-b"])
# (.device without the model is ~34 MB, .device-b ~28 MB: under the 64 MiB a call carries. The
# GPU tests are main's binary, run against vtail3's library: the branch changes no test.)
# Staged in session 16 (main 1ff43c4, vtail3 295fcfa): .device-b is ready; .device needs only
# `rm -rf .device/model` if main's CUDA code has not changed since.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage  # .device-b/lib: the same directory with the other library
# Worst case 150 + 90 + 4 x 75 = 540 s, under a call's 600.
echo "== vtail3 [attention][sm90], [varlen_nan], [split] (correctness first)"
LD_LIBRARY_PATH=$PWD/.device-b/lib timeout -k 10 150 .device/bin/flashkit_tests_gpu \
  "[attention][sm90],[varlen_nan],[split]" 2>&1 | tail -3
echo "== vtail3 memcheck [sanitize][attention]"
LD_LIBRARY_PATH=$PWD/.device-b/lib timeout -k 10 90 compute-sanitizer --tool memcheck \
  .device/bin/flashkit_tests_gpu "[sanitize][attention]" 2>&1 | tail -2
for round in 1 2; do
  order="A B"
  [ $round = 2 ] && order="B A"  # A B B A: clock drift within the call cancels
  for side in $order; do
    dir=.device/lib
    [ $side = B ] && dir=.device-b/lib
    echo "== round $round, $side ($dir)"
    LD_LIBRARY_PATH=$PWD/$dir timeout -k 10 75 python3 benchmarks/attention.py --lib $dir --family sm90 \
      --head-dims 64,128 --seqlens 512,2048,8192 --reps 8 --json "$OUT/attn_${side}${round}.json" 2>&1 |
      grep -v "^\s*$" | tail -22
  done
done
