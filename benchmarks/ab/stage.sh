# Sourced by the A/B scripts here (run from the repository root on the device machine):
# ab_stage unpacks .device/lib and builds .device-b/lib, the same library directory with the
# library in .device-b/lib.so.gz (or .device-b/lib.so.xz: two gzipped libraries pass the 64 MiB
# a call carries) under the same file names, points LD_LIBRARY_PATH at .device/lib (side B), sets
# OUT (default /tmp/fk-out, created) and LIB (side B's libflashkit.so, as dev_stage does), then
# prints the GPU line and .device/BUILD_INFO.
# dev_unxz: unpacks .device/lib/*.xz (scripts/gpu-check.sh --build-only stages the library
# with xz since session 50) beside itself, through Python's lzma (the device image has no xz
# for certain); an unpacked library newer than its .xz is kept.
dev_unxz() {
  local z
  for z in .device/lib/*.xz; do
    [ -f "$z" ] || continue
    [ "${z%.xz}" -nt "$z" ] && continue
    python3 -c "import lzma, sys; open(sys.argv[1][:-3], 'wb').write(lzma.open(sys.argv[1]).read())" "$z"
  done
}
ab_stage() {
  local z real
  OUT=${OUT:-/tmp/fk-out}
  mkdir -p "$OUT"
  [ -f .device-b/lib.so.xz ] && python3 -c "import gzip,lzma,sys; open(sys.argv[2],'wb').write(gzip.compress(lzma.open(sys.argv[1]).read(),1))" .device-b/lib.so.xz .device-b/lib.so.gz
  export LD_LIBRARY_PATH=$PWD/.device/lib
  for z in .device/lib/*.gz; do [ -f "$z" ] && gunzip -kf "$z"; done
  dev_unxz
  rm -rf .device-b/lib && cp -a .device/lib .device-b/lib
  real=$(readlink -f .device/lib/libflashkit.so)
  gunzip -c .device-b/lib.so.gz > ".device-b/lib/$(basename "$real")"
  LIB=$PWD/.device/lib/libflashkit.so  # the B side, as dev_stage's LIB
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  cat .device/BUILD_INFO 2>/dev/null
}
# ab_rounds FUNC: calls FUNC SIDE ROUND LIB for the sides in the order A B B A (drift within
# the call weighs on both alike), where LIB is .device-b's library for A and .device's for B,
# with a "== round R, SIDE (LIB)" line before each.
ab_rounds() {
  local round side lib order
  for round in 1 2; do
    order="A B"
    [ "$round" = 2 ] && order="B A"
    for side in $order; do
      lib=.device/lib/libflashkit.so
      [ "$side" = A ] && lib=.device-b/lib/libflashkit.so
      echo "== round $round, $side ($lib)"
      "$1" "$side" "$round" "$lib"
    done
  done
}
# dev_stage [FIELDS]: for the scripts that run one library (.device): unpacks .device/lib,
# exports LD_LIBRARY_PATH to it, sets LIB (its libflashkit.so) and OUT (default /tmp/fk-out,
# created), then prints the GPU line (nvidia-smi FIELDS, default name,driver_version,
# clocks.max.sm).
dev_stage() {
  local z
  for z in .device/lib/*.gz; do [ -f "$z" ] && gunzip -kf "$z"; done
  dev_unxz
  export LD_LIBRARY_PATH=$PWD/.device/lib
  LIB=$PWD/.device/lib/libflashkit.so
  OUT=${OUT:-/tmp/fk-out}
  mkdir -p "$OUT"
  nvidia-smi --query-gpu="${1:-name,driver_version,clocks.max.sm}" --format=csv,noheader
}
# gemm_ncu LIMIT NAME ARGS...: one ncu profile of `python3 benchmarks/gemm.py --lib $LIB ARGS`
# (its --profile mode) with the options in the array NCU, into $NDIR/ncu_NAME.csv; skipped once
# the call has used LIMIT seconds. Prints the exit status, the CSV rows and what was profiled.
gemm_ncu() {
  local limit=$1 name=$2
  shift 2
  if [ $SECONDS -gt "$limit" ]; then echo "$name: skipped (${SECONDS} s used)"; return; fi
  timeout -k 5 50 "${NCU[@]}" python3 benchmarks/gemm.py --lib "$LIB" "$@" >"$NDIR/ncu_$name.csv" 2>&1
  echo "$name: rc $?, $(grep -c '^"' "$NDIR/ncu_$name.csv") CSV rows, $(grep -m1 -o 'profiled.*' "$NDIR/ncu_$name.csv")"
}
# sass_profile NAME KERNEL SKIP COMMAND...: one per-instruction ncu profile (source page, SASS,
# warp states) of the first launch of a kernel matching the regex KERNEL after SKIP launches
# of it, while COMMAND runs, into $OUT/sass_NAME.csv (at most SASS_LIMIT seconds, default 90).
# Prints the exit status and the SASS rows. Read with benchmarks/ncu_sass.py.
sass_profile() {
  local name=$1 kernel=$2 skip=$3 rc lines
  shift 3
  timeout -k 10 "${SASS_LIMIT:-90}" ncu --clock-control none --section WarpStateStats \
    --section SourceCounters --page source --print-source sass --csv \
    -k "regex:$kernel" -s "$skip" -c 1 "$@" >"$OUT/sass_$name.csv" 2>&1
  rc=$?
  lines=$(grep -c '^"0x' "$OUT/sass_$name.csv" 2>/dev/null || true)
  echo "$name: rc $rc, $lines SASS rows (${SECONDS} s)"
}
# attn80_ncu_cell TAG HEAD_DIM SEQLEN: Nsight Compute (--page details, the sections below), one
# launch each, of the forced sm80-class attention kernel and of torch's FlashAttention-2 kernel
# on the same non-causal cell, into $NDIR/ncu_fk_TAG.csv and $NDIR/ncu_fa2_TAG.csv (read with
# benchmarks/ncu_compare.py). Needs LIB (dev_stage) and NDIR.
attn80_ncu_cell() {
  local tag=$1 d=$2 s=$3
  local sections=(--section SpeedOfLight --section Occupancy --section LaunchStats
    --section WarpStateStats --section SchedulerStats --section InstructionStats
    --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis)
  local args=(--lib "$LIB" --family sm80 --head-dims "$d" --seqlens "$s" --causal 0 --no-extra
    --warmup 2 --reps 3)
  mkdir -p "$NDIR"
  timeout -k 5 80 ncu --clock-control none "${sections[@]}" --csv --page details \
    -k regex:attention_fwd_kernel -s 2 -c 1 python3 benchmarks/attention.py "${args[@]}" \
    --no-anchors >"$NDIR/ncu_fk_$tag.csv" 2>&1
  echo "fk_$tag: rc $?, $(grep -c '^"' "$NDIR/ncu_fk_$tag.csv") rows (${SECONDS} s)"
  timeout -k 5 80 ncu --clock-control none "${sections[@]}" --csv --page details \
    -k regex:flash_fwd_kernel -s 2 -c 1 python3 benchmarks/attention.py "${args[@]}" \
    >"$NDIR/ncu_fa2_$tag.csv" 2>&1
  echo "fa2_$tag: rc $?, $(grep -c '^"' "$NDIR/ncu_fa2_$tag.csv") rows (${SECONDS} s)"
}
# attn80_sass_pair HEAD_DIM SEQLEN: sass_profile of the forced sm80-class attention kernel and
# of torch's FlashAttention-2 kernel on the same non-causal cell, into
# $NDIR/sass_fk_hdD_sS.csv and $NDIR/sass_fa2_hdD_sS.csv. Needs LIB (dev_stage) and NDIR.
attn80_sass_pair() {
  local d=$1 s=$2
  local args=(--lib "$LIB" --family sm80 --head-dims "$d" --seqlens "$s" --causal 0 --no-extra
    --warmup 2 --reps 3)
  OUT=$NDIR sass_profile "fk_hd${d}_s$s" attention_fwd_kernel 2 python3 benchmarks/attention.py \
    "${args[@]}" --no-anchors
  OUT=$NDIR sass_profile "fa2_hd${d}_s$s" flash_fwd_kernel 2 python3 benchmarks/attention.py \
    "${args[@]}"
}
# catch_summary LOG: the Catch2 summary line of LOG (or "No test cases matched").
catch_summary() {
  grep -E '^(All tests passed|test cases:|No test cases matched)' "$1" | tail -n1
}
# gpu_case BIN FILTER [LABEL]: runs the Catch2 test FILTER of BIN (at most GPU_CASE_LIMIT
# seconds, default 200) into $OUT/t.log and prints its summary line (and the first failures).
gpu_case() {
  # A comma in a Catch2 test spec separates two specs: escaped, so that a case name with one
  # matches itself (before session 54 such names matched no case and printed an empty result).
  timeout -k 10 "${GPU_CASE_LIMIT:-200}" "$1" "${2//,/\\,}" > "$OUT/t.log" 2>&1
  echo "${3:-$2}: $(catch_summary "$OUT/t.log") (${SECONDS} s)"
  grep -B6 -A24 FAILED "$OUT/t.log" | head -60
}
# stream_cases BIN PREFIX [FILTERS...]: gpu_case for "[stream]", the non-finite FFT-convolution
# case and FILTERS, each labelled PREFIX + filter (the streamed sm90 direct convolution's checks).
stream_cases() {
  local bin=$1 prefix=$2 t
  shift 2
  for t in "[stream]" "sm80 fftconv_direct: non-finite inputs spread to the whole row" "$@"; do
    gpu_case "$bin" "$t" "$prefix$t"
  done
}
# sanitize_case BIN TOOL FILTER [LABEL]: compute-sanitizer TOOL on the test FILTER of BIN into
# $OUT/TOOL.log; prints the exit status and the summary line (and the first reports).
sanitize_case() {
  timeout -k 10 150 compute-sanitizer --tool "$2" --error-exitcode 9 "$1" "${3//,/\\,}" > "$OUT/$2.log" 2>&1
  echo "${4:+$4 }$2 rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$2.log" | tail -n1), $(catch_summary "$OUT/$2.log") (${SECONDS} s)"
  grep -m5 -A6 "Invalid\|Hazard" "$OUT/$2.log" | head -30
}
# fftconv_side SIDE ROUND [SEQLENS]: benchmarks/fftconv.py (bf16, B 64, H 768, median of 10) on
# .device-b's library for SIDE A, else .device's, with a "== SIDE" line; JSON in
# $OUT/ab_SIDEROUND.json. The gated rows are left out of the output (in the JSON) unless
# GATED=1. Environment set by the caller reaches the benchmark.
fftconv_side() {
  local lib=.device/lib/libflashkit.so drop=True
  [ "$1" = A ] && lib=.device-b/lib/libflashkit.so
  [ "${GATED:-0}" = 1 ] && drop='^$'
  echo "== $1 ($lib)"
  LD_LIBRARY_PATH=$(dirname "$lib") timeout -k 5 120 python3 benchmarks/fftconv.py --lib "$lib" \
    --reps 10 --seqlens ${3:-256 512 1024} --json "$OUT/ab_$1$2.json" 2>&1 | grep -v '^json' | grep -v "$drop"
  echo "(${SECONDS} s)"
}
# fftconv_ab [SEQLENS]: fftconv_side for the sides in ORDER (default A B B A), rounds numbered.
fftconv_ab() {
  local s r=0
  for s in ${ORDER:-A B B A}; do r=$((r + 1)); fftconv_side "$s" $r "$@"; done
}
# attn_ab ORDER ARGS...: `python3 benchmarks/attention.py ARGS` once per side in ORDER (e.g.
# "A B B A"), one process each, with .device-b's library (or $AB_LIB_A) for A and .device's for every other
# side; side S runs with the environment assignments in $AB_ENV_S (e.g. AB_ENV_N=
# "FLASHKIT_SM90_ATTENTION_NARROW=1"). JSON in $OUT/g_SIDE_RUN.json, then the per-cell table of
# benchmarks/ab/attn_ab_table.py.
attn_ab() {
  local order=$1 n=0 side lib envv
  shift
  for side in $order; do
    n=$((n + 1))
    lib=.device/lib/libflashkit.so
    [ "$side" = A ] && lib=${AB_LIB_A:-.device-b/lib/libflashkit.so}
    envv=AB_ENV_$side
    attn_side "${side}_$n" "$lib" "${!envv:-}" "$@"
  done
  python3 benchmarks/ab/attn_ab_table.py "$OUT"
}
# attn_side NAME LIB ENV ARGS...: one process of `python3 benchmarks/attention.py --lib LIB ARGS`
# with the environment assignments ENV (empty or X=1 for none), JSON and log in
# $OUT/g_NAME.json / .log (NAME as SIDE_RUN, for benchmarks/ab/attn_ab_table.py); prints its
# exit status. attn_ab runs one per side.
attn_side() {
  local name=$1 lib=$2 envv=$3
  shift 3
  env $envv LD_LIBRARY_PATH="$(dirname "$lib")" timeout -k 5 100 python3 benchmarks/attention.py \
    --lib "$lib" "$@" --json "$OUT/g_$name.json" > "$OUT/g_$name.log" 2>&1
  echo "$name rc $? (${SECONDS} s)"
}
# kv_ab PREFIX ENV_A HEADS ARGS...: benchmarks/attention.py --only-kvcache on $LIB (one library),
# sides A B B A, A with the environment assignment ENV_A and B with none; one process per side
# and per H,HK,D of the space-separated HEADS, with ARGS (after --no-anchors --reps 20); JSON
# and log in $OUT/PREFIX_SIDE_RUN_H-HK-D.*; then benchmarks/ab/kv_ab_table.py's per-cell table.
# KV_LIB_A set: side A runs that library instead (ENV_A then names the comparison, X=1 for none).
kv_ab() {
  local prefix=$1 env_a=$2 heads_list=$3 side heads envv f lib n=0
  shift 3
  for side in A B B A; do
    n=$((n + 1))
    envv=X=1
    lib=$LIB
    [ "$side" = A ] && envv=$env_a && lib=${KV_LIB_A:-$LIB}
    for heads in $heads_list; do
      f="$OUT/${prefix}_${side}_${n}_${heads//,/-}"
      env $envv LD_LIBRARY_PATH="$(dirname "$lib")" timeout -k 5 100 python3 benchmarks/attention.py --lib "$lib" --only-kvcache \
        --kv-heads "$heads" --no-anchors --reps 20 "$@" --json "$f.json" > "$f.log" 2>&1 \
        || { echo "side $side run $n heads $heads failed:"; tail -5 "$f.log"; }
    done
    echo "side $side run $n (${SECONDS} s)"
  done
  python3 benchmarks/ab/kv_ab_table.py "$OUT" "$prefix" "$env_a${KV_LIB_A:+ on $KV_LIB_A}"
}
# sanitize_both BIN FILTER: memcheck, then racecheck, on the test FILTER of BIN (sanitize_case).
sanitize_both() {
  sanitize_case "$1" memcheck "$2"
  sanitize_case "$1" racecheck "$2"
}
# pairs_cases BIN: the varlen causal pairs case, by default and under INDEX64=1 (the 64-bit
# numbering), and both sanitizers on its small case.
pairs_cases() {
  local pc="sm90 attention: varlen causal tiles in pairs per sequence"
  GPU_CASE_LIMIT=120 gpu_case "$1" "$pc"
  FLASHKIT_SM90_ATTENTION_INDEX64=1 GPU_CASE_LIMIT=120 gpu_case "$1" "$pc" "index64: pairs per sequence"
  sanitize_both "$1" "sm90 attention: varlen causal pairs, small"
}
# pairs_varlen_ab: varlen causal pairs per sequence (B, the default) against main's order on the
# same library (A: FLASHKIT_SM90_ATTENTION_PAIRS=0), A B B A: the issue's varlen row, and 127
# sequences of 96-400 tokens with one of 800 (the 6-tile bound's unmeasured side: one sequence
# of 7 tiles); JSON in $OUT/v1, $OUT/v2. Leaves AB_LIB_A / AB_ENV_A / AB_ENV_B set.
pairs_varlen_ab() {
  local short1 spec n=0
  export AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A=FLASHKIT_SM90_ATTENTION_PAIRS=0 AB_ENV_B=X=1
  short1=$(python3 -c "print(','.join(str(96 + (i * 131) % 305) for i in range(127)) + ',800')")
  for spec in "--varlen-heads 16,128" "--varlen-lens $short1 --varlen-heads 16,128"; do
    n=$((n + 1))
    attn_ab "A B B A" --only-varlen --reps 20 $spec 2>&1 | grep -v ', 0, '
    mkdir -p "$OUT/v$n" && mv "$OUT"/g_* "$OUT/v$n/"
  done
}
