#!/usr/bin/env bash
# Staged in session 19 for the next device session (not yet run), one call on main's build
# (.device, `scripts/gpu-check.sh --build-only` first), about 330 s:
#   1. the tests session 19 added after its GPU check: `[fftconv]` (four new cases: fp16/bf16 at
#      fft_size 2^22, circular at 2^17 and 2^20, B = 64 at fft_size 16K/32K, H = 768 at L 4K/8K;
#      a helper ran them once through a build of its own) and the GEMM unaligned-operand cases
#      (a/b bases one element off fall back; c/d bases one element off stay on the kernel, with
#      the bytes below D's base checked), sm90 and sm80, and the sm90 attention case that runs
#      the full causal x window x softcap product on one shape;
#   2. the ring depth at 64 k-tiles: the Hopper GEMM gives 3 stages to tiles of more than 32
#      k-tiles, cuBLAS's kernels at the same shapes run 4 (ncu, RESULTS "Issue 7's whole grid").
#      Default against FLASHKIT_SM90_GEMM_STAGES=4 (read once per process), in the order
#      default 4 4 default, bf16 and fp16 at 4096^3, 4096 x 12288 x 4096 and 8192^3;
#   3. ncu stall reasons (WarpStateStats, raw page: smsp__average_warps_issue_stalled_*), flashkit
#      against cuBLAS, at bf16 4096^3 and the cells session 19 left unprofiled: fp16 8192 x 8192
#      x 1024 and fp16 16 x 8192 x 8192. The CSVs come back as $OUT/ncu20.tar.gz; read them with
#      benchmarks/ncu_compare.py --grep stalled;
#   4. if time is left: the raster group at 4096^3 and 4096 x 12288 x 4096 (flashkit moved 1.22 /
#      1.15x cuBLAS's DRAM bytes there, ncu, session 19), groups 1/4/16/32 each in a process.
# run(command="bash benchmarks/ab/next20_device.sh", carry=[".device"]).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
echo "== 1. tests added after session 19's GPU check"
timeout -k 5 150 .device/bin/flashkit_tests_gpu "[fftconv]" 2>&1 | tail -3
echo "(exit ${PIPESTATUS[0]}, ${SECONDS} s)"
timeout -k 5 60 .device/bin/flashkit_tests_gpu \
  "sm90 gemm: unaligned operands*,sm80 gemm: unaligned operands*,sm90 gemm: fp8 (e4m3/e5m2)*,sm90 attention: causal x window x softcap*" \
  2>&1 | tail -3
echo "(exit ${PIPESTATUS[0]}, ${SECONDS} s)"
echo "== 2. ring depth: default vs FLASHKIT_SM90_GEMM_STAGES=4"
for st in default 4 4 default; do
  echo "-- stages $st"
  if [ "$st" = default ]; then env=(); else env=(FLASHKIT_SM90_GEMM_STAGES=$st); fi
  env "${env[@]}" timeout -k 5 60 python3 benchmarks/gemm.py --lib "$LIB" --dtype bf16 fp16 \
    --no-fused --shapes 4096x4096x4096 4096x12288x4096 8192x8192x8192 --reps 20 --warmup 5 \
    --json "$OUT/stages.json" 2>&1 | grep -E "^gemm " | cut -c1-100
done
rm -f "$OUT/stages.json"
echo "(${SECONDS} s)"
echo "== 3. stall reasons, flashkit and cuBLAS"
NDIR=/tmp/fk-ncu20
rm -rf "$NDIR" && mkdir -p "$NDIR"
NCU=(ncu --clock-control none --profile-from-start off -s 2 -c 1 --csv --page raw
     --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis)
for spec in "bf16 4096 4096 4096" "fp16 8192 8192 1024" "fp16 16 8192 8192"; do
  set -- $spec
  tag="$1_$2x$3x$4"
  gemm_ncu 520 "fk_$tag" --profile "$2" "$3" "$4" --profile-dtype "$1"
  gemm_ncu 520 "cublas_$tag" --profile "$2" "$3" "$4" --profile-dtype "$1" --profile-anchor
done
tar czf "$OUT/ncu20.tar.gz" -C "$NDIR" .
echo "== 4. raster group (1, 4, 16, 32) at 4096^3 and 4096 x 12288 x 4096, a process per knob"
if [ $SECONDS -lt 480 ]; then
  timeout -k 5 $((590 - SECONDS)) python3 benchmarks/gemm.py --lib "$LIB" --dtype bf16 --no-fused \
    --tune --tune-raster --shapes 4096x4096x4096 4096x12288x4096 --reps 10 --warmup 3 \
    --json "$OUT/tune20.json" 2>&1 | grep -E "^  tune (FLASHKIT|BASE)|Error|Traceback" | cut -c1-140
else
  echo "(skipped: ${SECONDS} s used)"
fi
ls -la "$OUT"
