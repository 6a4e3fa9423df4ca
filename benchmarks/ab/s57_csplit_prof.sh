#!/usr/bin/env bash
# Session 57: where a causal split-KV call over a KV cache spends its time (csplit56 build in
# .device). Nsight Compute gpu__time_duration of every launch of one benchmark cell (warmup 1,
# reps 2), split (default) and unsplit (SPLIT_KV=0), then per kernel name the launches and the
# median duration. Carry [".device/lib", ".device/bin"].
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
cell() {  # TAG ENV HEADS SHAPE QUERIES
  local tag=$1 envv=$2 heads=$3 shape=$4 nq=$5
  env $envv timeout -k 5 90 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    python3 benchmarks/attention.py --lib "$LIB" --only-kvcache --kv-heads "$heads" --no-anchors \
    --warmup 1 --reps 2 --kv-queries "$nq" --kv-pages 0 --kv-shapes "$shape" > "$OUT/p_$tag.csv" 2>&1
  echo "== $tag ($envv $heads $shape q$nq) rc $? (${SECONDS} s)"
  python3 - "$OUT/p_$tag.csv" <<'PY'
import csv, sys, statistics, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; ki = hdr.index("Kernel Name"); vi = hdr.index("Metric Value"); ii = hdr.index("ID")
seq = []
for r in rows[1:]:
    try: seq.append((int(r[ii]), r[ki][:90], float(r[vi].replace(",", ""))))
    except ValueError: pass
seq.sort()
for i, n, v in seq: print(f"  {i:4d} {v/1000:9.2f} us  {n}")
PY
}
cell s32_2 X=1 32,4,128 1x32768 2
cell s32_16 X=1 32,4,128 1x32768 16
cell u8_16 FLASHKIT_ATTENTION_SPLIT_KV=0 32,8,128 8x8192 16
cell s8_16 X=1 32,8,128 8x8192 16
cell s8_1 X=1 32,8,128 8x8192 1
# The same A B B A as s56_csplit_device.sh on fewer cells, 8 calls between one pair of events
# (--kv-calls 8: the GPU's rate without the host's launch gaps).
kv_ab k FLASHKIT_ATTENTION_SPLIT_KV=0 "32,8,128 32,4,128" --kv-queries 2,16 --kv-pages 0 \
  --kv-shapes 1x32768,4x8192,8x8192 --kv-calls 8
echo "== done (${SECONDS} s)"
