#!/usr/bin/env bash
# Next step after session 24's swizzle: branch dec80pad (the sm80 decode tiles back on padded
# rows, the 128-row tiles swizzled). A = .device-b's library (main with the swizzled decode
# tiles), B = .device's (dec80pad). One device call:
#   1. on B: flashkit_tests_gpu "[attention][sm80]" and "[attention]~[sm80]~[sm90]" (the KV-cache
#      cases run the decode tiles, pages of 1, 2 and 8 keys among them); memcheck on the decode
#      cases and "sm80 attention: small cases".
#   2. the decode rows of swz80dec_device.sh (KV caches with pages of 16, forced sm80 decode),
#      order A B B A, --reps 20; per row medians and A / B.
#   3. ncu (details + per-instruction page) of the swizzled head_dim 256 kernel at seqlen 2048,
#      and of the Hopper kernel and cuDNN at head_dim 64 causal 512 (the weakest Hopper cell).
# Everything lands in one archive, $OUT/dec80pad.tar.gz (a call returns at most 8 files).
# Staging: on branch dec80pad, scripts/gpu-check.sh --build-only && rm -rf .device/model, and
# .device-b/lib.so.gz = gzip of main's libflashkit.so. Carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
W=/tmp/fk-dec80pad
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
export LD_LIBRARY_PATH=$PWD/.device/lib
timeout -k 10 200 "$bin" "[attention][sm80]" > "$W/t_sm80.log" 2>&1
echo "[attention][sm80]: $(grep -E '^(All tests passed|test cases:)' "$W/t_sm80.log" | tail -n1)"
timeout -k 10 240 "$bin" "[attention]~[sm80]~[sm90]" > "$W/t_other.log" 2>&1
echo "[attention]~[sm80]~[sm90]: $(grep -E '^(All tests passed|test cases:)' "$W/t_other.log" | tail -n1)"
grep -h -B3 -A12 FAILED "$W"/t_*.log | head -30
timeout -k 10 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" \
  "gpu kvcache: pages of 1*,sm80 attention: head dims that are not multiples of 8,sm80 attention: small cases" \
  > "$W/memcheck.log" 2>&1
echo "memcheck rc $?: $(grep 'ERROR SUMMARY' "$W/memcheck.log" | tail -n1) (${SECONDS} s)"
n=0
for side in A B B A; do
  n=$((n + 1))
  lib=.device/lib/libflashkit.so
  [ "$side" = A ] && lib=.device-b/lib/libflashkit.so
  LD_LIBRARY_PATH=$(dirname $lib) timeout -k 5 60 python3 benchmarks/attention.py --lib "$lib" \
    --only-kvcache --no-anchors --reps 20 --warmup 5 --json "$W/kv_${side}_$n.json" > /dev/null 2>&1
  LD_LIBRARY_PATH=$(dirname $lib) timeout -k 5 60 python3 benchmarks/attention.py --lib "$lib" \
    --family sm80 --only-decode --no-anchors --reps 20 --warmup 5 --json "$W/dec_${side}_$n.json" > /dev/null 2>&1
  echo "run $n $side (${SECONDS} s)"
done
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import glob, json, os, statistics, sys
w = sys.argv[1]
for kind in ("kv", "dec"):
    tab = {}
    for f in sorted(glob.glob(f"{w}/{kind}_*_*.json")):
        side = os.path.basename(f).split("_")[1]
        for r in json.load(open(f))["rows"]:
            k = (r.get("label"), r["batch"], r["seqlen"], r.get("page"), r.get("variant"))
            tab.setdefault(k, {}).setdefault(side, []).append(r["flashkit_ms"] * 1e3)
    print(f"== {kind}: label batch seqlen page variant | A us [range] | B us [range] | A/B")
    for k in sorted(tab, key=str):
        a, b = tab[k].get("A", []), tab[k].get("B", [])
        if a and b:
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"{k} | {ma:.1f} [{min(a):.1f}-{max(a):.1f}] | {mb:.1f} [{min(b):.1f}-{max(b):.1f}] | {ma/mb:.3f}")
PY
SEC=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
  --section SchedulerStats --section InstructionStats)
LIB=$PWD/.device/lib/libflashkit.so
a256=(--lib "$LIB" --family sm80 --head-dims 256 --seqlens 2048 --causal 0 --no-extra --warmup 2 --reps 3 --no-anchors)
timeout -k 5 80 ncu --clock-control none "${SEC[@]}" --csv --page details -k regex:attention_fwd_kernel \
  -s 2 -c 1 python3 benchmarks/attention.py "${a256[@]}" > "$W/ncu_fk80_hd256_s2048.csv" 2>&1
echo "ncu sm80 hd256 rc $? (${SECONDS} s)"
OUT=$W sass_profile fk80_hd256_s2048 attention_fwd_kernel 2 python3 benchmarks/attention.py "${a256[@]}"
cat > /tmp/cudnn_cell.py <<'PY'
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
q, k, v = (torch.randn(32, 32, 512, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
torch.cuda.synchronize()
PY
timeout -k 5 80 ncu --clock-control none "${SEC[@]}" --csv --page details \
  -k "regex:(?i)sdpa|fmha|fprop|cudnn" -s 2 -c 1 python3 /tmp/cudnn_cell.py > "$W/ncu_cudnn_hd64_causal512.csv" 2>&1
echo "ncu cudnn rc $? (${SECONDS} s)"
timeout -k 5 80 ncu --clock-control none "${SEC[@]}" --csv --page details -k regex:attention_sm90 \
  -s 2 -c 1 python3 benchmarks/attention.py --lib "$LIB" --family sm90 --head-dims 64 --seqlens 512 \
  --causal 1 --no-anchors --no-extra --warmup 2 --reps 1 > "$W/ncu_fk90_hd64_causal512.csv" 2>&1
echo "ncu sm90 rc $? (${SECONDS} s)"
tar czf "$OUT/dec80pad.tar.gz" -C "$W" .
ls "$OUT"
