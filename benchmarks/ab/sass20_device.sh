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
SASS_LIMIT=120
# (FLASHKIT_SM90_GEMM_CLUSTER: branch cluster20's switch, which this run's build had; main
# ignores it.)
sass_profile fk_4096 gemm_sm90 2 env FLASHKIT_SM90_GEMM_CLUSTER=1 \
  python3 benchmarks/gemm.py --lib "$LIB" --profile 4096 4096 4096
sass_profile cublas_4096 nvjet 2 \
  python3 benchmarks/gemm.py --lib "$LIB" --profile 4096 4096 4096 --profile-anchor
gzip "$OUT"/*.csv
ls -la "$OUT"
