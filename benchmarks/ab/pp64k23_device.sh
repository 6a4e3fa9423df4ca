#!/usr/bin/env bash
# Session 23: A = main 10e8d3b's library (.device-b/lib.so.gz), B = the table with the
# 128-column ping-pong for 16-bit inputs at <= 64 k-tiles over >= 8 waves of tiles (.device).
# benchmarks/gemm.py bf16 and fp16 (plain) on the shapes the rule moves (4096 x 12288 x 4096,
# 8192 x 8192 x 4096) and 4096^3 (unchanged, the control), one process per side, A B B A.
# Carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
one() {
  LD_LIBRARY_PATH=$(dirname "$3") timeout -k 5 100 python3 benchmarks/gemm.py --lib "$3" --dtype bf16 fp16 --no-fused \
    --reps 20 --warmup 5 --shapes 4096x12288x4096 8192x8192x4096 4096x4096x4096 \
    --json "$OUT/pp64_$1_$2.json" > "$OUT/pp64_$1_$2.txt" 2>&1
  echo "rc $? (${SECONDS} s)"
}
ab_rounds one
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
tab = {}
for f in sorted(glob.glob(f"{out}/pp64_*_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        key = (r["dtype"], r["M"], r["N"], r["K"])
        tab.setdefault(key, {}).setdefault(side, []).append((r["flashkit_tflops"], r["torch_tflops"], r["variant"], r["rel_err_vs_torch"]))
print("row | A fk [range] | B fk [range] | B/A | A/torch | B/torch (medians of per-run ratios) | B max rel err")
for k, v in tab.items():
    a = [x[0] for x in v["A"]]; b = [x[0] for x in v["B"]]
    ra = statistics.median(x[0] / x[1] for x in v["A"]); rb = statistics.median(x[0] / x[1] for x in v["B"])
    print(f"{k} | {statistics.median(a):.1f} [{min(a):.0f}-{max(a):.0f}] | {statistics.median(b):.1f} "
          f"[{min(b):.0f}-{max(b):.0f}] | {statistics.median(b) / statistics.median(a):.3f} | {ra:.3f} | {rb:.3f} | {max(x[3] for x in v['B']):.1e}")
PY
grep -h "schedule\|variant" "$OUT"/pp64_B_1.txt | head -3
