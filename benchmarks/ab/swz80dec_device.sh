#!/usr/bin/env bash
# Session 24: the swizzled sm80-class attention kernel on the decode paths it also serves: the
# KV-cache rows (benchmarks/attention.py --only-kvcache; pages of 16 keys run the sm80 decode
# tiles, the rest the Hopper kernel, unchanged) and the forced sm80 decode rows (--family sm80
# --only-decode). A = .device-b's library (main before the change), B = .device's (branch
# swz80); order A B B A, --reps 20; per row medians of flashkit's time and B / A.
# Then ncu of B at head_dim 256 (below). Carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
# The two test cases added after the review of the change (pages of 1, 2 and 8 keys on the
# decode tiles; decode tiles with head dims that are not multiples of 8), then memcheck on them.
bin=.device/bin/flashkit_tests_gpu
tests="gpu kvcache: pages of 1*,sm80 attention: head dims that are not multiples of 8"
LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 5 120 "$bin" "$tests" > "$OUT/t_new.log" 2>&1
echo "new cases: $(grep -E '^(All tests passed|test cases:)' "$OUT/t_new.log" | tail -n1)"
grep -B3 -A12 FAILED "$OUT/t_new.log" | head -30
LD_LIBRARY_PATH=$PWD/.device/lib timeout -k 5 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$bin" "$tests" > "$OUT/memcheck_new.log" 2>&1
echo "memcheck rc $?: $(grep 'ERROR SUMMARY' "$OUT/memcheck_new.log" | tail -n1) (${SECONDS} s)"
n=0
for side in A B B A; do
  n=$((n + 1))
  lib=.device/lib/libflashkit.so
  [ "$side" = A ] && lib=.device-b/lib/libflashkit.so
  LD_LIBRARY_PATH=$(dirname $lib) timeout -k 5 60 python3 benchmarks/attention.py --lib "$lib" \
    --only-kvcache --no-anchors --reps 20 --warmup 5 --json "$OUT/kv_${side}_$n.json" > /dev/null 2>&1
  echo "kv run $n $side rc $? (${SECONDS} s)"
  LD_LIBRARY_PATH=$(dirname $lib) timeout -k 5 60 python3 benchmarks/attention.py --lib "$lib" \
    --family sm80 --only-decode --no-anchors --reps 20 --warmup 5 --json "$OUT/dec_${side}_$n.json" > /dev/null 2>&1
  echo "decode run $n $side rc $? (${SECONDS} s)"
done
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
for kind in ("kv", "dec"):
    tab = {}
    for f in sorted(glob.glob(f"{out}/{kind}_*_*.json")):
        side = os.path.basename(f).split("_")[1]
        for r in json.load(open(f))["rows"]:
            k = (r.get("label"), r["batch"], r["seqlen"], r.get("page"), r.get("variant"))
            ms = r.get("flashkit_ms") or r.get("ms")
            tab.setdefault(k, {}).setdefault(side, []).append(ms * 1e3)
    print(f"== {kind}: label batch seqlen page variant | A us [range] | B us [range] | A/B (speed-up)")
    for k in sorted(tab, key=str):
        a, b = tab[k].get("A", []), tab[k].get("B", [])
        if not a or not b: continue
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{k} | {ma:.1f} [{min(a):.1f}-{max(a):.1f}] | {mb:.1f} [{min(b):.1f}-{max(b):.1f}] | {ma/mb:.3f}")
PY
# Then Nsight Compute on B's head_dim 256 kernel (the cell of attn80_ncu_device.sh), for the
# next step: one --page details CSV and one per-instruction source page, in $OUT/ncu_swz.tar.gz.
export LD_LIBRARY_PATH=$PWD/.device/lib
LIB=$PWD/.device/lib/libflashkit.so
NDIR=/tmp/fk-ncu-swz
mkdir -p "$NDIR"
args=(--lib "$LIB" --family sm80 --head-dims 256 --seqlens 2048 --causal 0 --no-extra --warmup 2 --reps 3 --no-anchors)
timeout -k 5 80 ncu --clock-control none --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --csv --page details -k regex:attention_fwd_kernel -s 2 -c 1 python3 benchmarks/attention.py \
  "${args[@]}" > "$NDIR/ncu_fk_swz_hd256_s2048.csv" 2>&1
echo "ncu details rc $? (${SECONDS} s)"
OUT=$NDIR sass_profile fk_swz_hd256_s2048 attention_fwd_kernel 2 python3 benchmarks/attention.py "${args[@]}"
tar czf "$OUT/ncu_swz.tar.gz" -C "$NDIR" .
# Last: the weakest Hopper cell (head_dim 64, causal, seqlen 512, batch 32 x 32 heads: 0.785x
# cuDNN) under ncu against cuDNN's kernel on the same inputs (a --page details CSV each, into
# the same archive): what tile, grid, occupancy and stall mix cuDNN runs there.
cat > /tmp/cudnn_cell.py <<'PY'
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
q, k, v = (torch.randn(32, 32, 512, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
torch.cuda.synchronize()
PY
timeout -k 5 80 ncu --clock-control none --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --csv --page details -k "regex:(?i)sdpa|fmha|fprop|cudnn" -s 2 -c 1 python3 /tmp/cudnn_cell.py \
  > "$NDIR/ncu_cudnn_hd64_causal512.csv" 2>&1
echo "ncu cudnn rc $? $(grep -c '^"' "$NDIR/ncu_cudnn_hd64_causal512.csv") rows (${SECONDS} s)"
timeout -k 5 80 ncu --clock-control none --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --csv --page details -k regex:attention_sm90 -s 2 -c 1 python3 benchmarks/attention.py --lib "$LIB" \
  --family sm90 --head-dims 64 --seqlens 512 --causal 1 --no-anchors --no-extra --warmup 2 --reps 1 \
  > "$NDIR/ncu_fk90_hd64_causal512.csv" 2>&1
echo "ncu fk sm90 rc $? $(grep -c '^"' "$NDIR/ncu_fk90_hd64_causal512.csv") rows (${SECONDS} s)"
tar czf "$OUT/ncu_swz.tar.gz" -C "$NDIR" .
