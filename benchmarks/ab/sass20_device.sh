#!/usr/bin/env bash
# Session 20: per-instruction profile (ncu source page) of one launch of the Hopper GEMM's
# cooperative kernel (no cluster) and of cuBLAS's kernel at bf16 4096^3, to find the per-tile
# cost that the K sweep and the wave sweep isolate (about 1.5 us per wave of tiles more than
# cuBLAS, equal cost per k-tile). Read with python3 benchmarks/ncu_sass.py <csv> --regions.
# run(command="bash benchmarks/ab/sass20_device.sh", carry=[".device"]).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
NCU=(ncu --clock-control none --section WarpStateStats --section SourceCounters
     --page source --print-source sass --csv)
FLASHKIT_SM90_GEMM_CLUSTER=1 timeout -k 10 120 "${NCU[@]}" -k regex:gemm_sm90 -s 2 -c 1 \
  python3 benchmarks/gemm.py --lib "$LIB" --profile 4096 4096 4096 >"$OUT/sass_fk_4096.csv" 2>&1
echo "fk rc $?, $(grep -c '^"0x' "$OUT/sass_fk_4096.csv") rows (${SECONDS} s)"
timeout -k 10 120 "${NCU[@]}" -k regex:nvjet -s 2 -c 1 \
  python3 benchmarks/gemm.py --lib "$LIB" --profile 4096 4096 4096 --profile-anchor \
  >"$OUT/sass_cublas_4096.csv" 2>&1
echo "cublas rc $?, $(grep -c '^"0x' "$OUT/sass_cublas_4096.csv") rows (${SECONDS} s)"
gzip "$OUT"/*.csv
ls -la "$OUT"
