#!/usr/bin/env bash
# A/B of branch epigelu (the lean copy-engine GEMM epilogue also takes ReLU and the tanh GELU)
# against main in one device call. A = main's library (.device-b/lib.so.gz), B = the branch's
# (.device, with the branch's GPU tests). Staging here:
#   on main: scripts/gpu-check.sh --build-only && cp .device/lib/libflashkit.so.*.gz .device-b/lib.so.gz
#   git checkout epigelu && scripts/gpu-check.sh --build-only && rm -rf .device/model .device/python
# then  run(command="bash benchmarks/ab/epigelu_device.sh", carry=[".device", ".device-b"]).
# What decides: the fused rows (bias + GELU, 4096^3 and 8192^3) and no loss on the plain rows.
# At 8192^3 both sides run at the power cap (RESULTS.md, session 14), so the A B B A order and
# the 4096^3 row matter more than one reading.
set -u
cd "$(dirname "$0")/../.."
for z in .device/lib/*.gz; do [ -f "$z" ] && gunzip -kf "$z"; done
rm -rf .device-b/lib && cp -a .device/lib .device-b/lib
real=$(readlink -f .device/lib/libflashkit.so)
gunzip -c .device-b/lib.so.gz > ".device-b/lib/$(basename "$real")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== B: [lean] and [pingpong] (correctness first)"
LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 150 .device/bin/flashkit_tests_gpu \
  "[lean],[pingpong]" 2>&1 | tail -3
echo "== B: memcheck and racecheck [lean_small]"
for tool in memcheck racecheck; do
  LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 10 60 compute-sanitizer --tool $tool \
    .device/bin/flashkit_tests_gpu "[lean_small]" 2>&1 | tail -1
done
SHAPES="4096x4096x4096 8192x8192x8192 8192x8192x1024"
for round in 1 2; do
  order="A B"
  [ $round = 2 ] && order="B A"
  for side in $order; do
    lib=.device/lib/libflashkit.so
    [ $side = A ] && lib=.device-b/lib/libflashkit.so
    echo "== round $round, $side ($lib)"
    timeout -k 10 70 python3 benchmarks/gemm.py --lib $lib --dtype bf16 --shapes $SHAPES \
      --reps 10 --warmup 3 --json "$OUT/gemm_${side}${round}.json" 2>&1 |
      grep -E "^(gemm|bias|fp8)" | cut -c1-110
  done
done
