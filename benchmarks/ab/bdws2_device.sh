#!/usr/bin/env bash
# Next step after session 25 (branch bdws2: the stationary blockdiag kernel at 128 registers,
# two CTAs per SM where they fit, stationary wherever it fits). A = .device-b's library (main
# 0480b27: stationary only at one CTA per SM, 240 registers), B = .device's (bdws2). One call:
#   1. on B: flashkit_tests_gpu "[monarch]"; memcheck and racecheck on "sm80 blockdiag linear*".
#   2. monarch.py --no-dense --n 1024 4096 16384 --tokens 16384 65536 --reps 7, order A B B A
#      (both sides default settings), then B with FLASHKIT_BLOCKDIAG_STATIONARY=0 once (the
#      ring); medians of the blockdiag rows and the unfused Monarch rows, A / B.
# Staging: on branch bdws2, scripts/gpu-check.sh --build-only && rm -rf .device/model
# .device/python .device/bin/flashkit_tests_cpu, and .device-b/lib.so.gz = gzip of main's
# libflashkit.so. Carry .device and .device-b. Everything in $OUT/bdws2.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
W=/tmp/fk-bdws2
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
export LD_LIBRARY_PATH=$PWD/.device/lib
timeout -k 10 200 "$bin" "[monarch]" > "$W/t_monarch.log" 2>&1
echo "[monarch]: $(grep -E '^(All tests passed|test cases:)' "$W/t_monarch.log" | tail -n1) (${SECONDS} s)"
grep -B3 -A14 FAILED "$W/t_monarch.log" | head -40
for tool in memcheck racecheck; do
  timeout -k 10 120 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm80 blockdiag linear*" > "$W/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool.log" | tail -n1) (${SECONDS} s)"
done
run_side() {  # SIDE ROUND LIB
  LD_LIBRARY_PATH=$(dirname "$3") timeout -k 5 100 python3 benchmarks/monarch.py --lib "$3" --no-dense \
    --n 1024 4096 16384 --tokens 16384 65536 --reps 7 --json "$W/m_$1_$2.json" > "$W/m_$1_$2.log" 2>&1
  echo "run $2 $1 rc $? (${SECONDS} s)"
}
ab_rounds run_side
FLASHKIT_BLOCKDIAG_STATIONARY=0 run_side R 1 "$PWD/.device/lib/libflashkit.so"
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import glob, json, os, statistics, sys
w = sys.argv[1]
tab = {}
for f in sorted(glob.glob(f"{w}/m_*_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        if r.get("op") == "blockdiag_linear":
            k = ("blockdiag", r["tokens"], r["n"])
        elif r.get("op") == "monarch" and "unfused" in r.get("variant", ""):
            k = ("monarch unfused", r["tokens"], r["n"])
        else:
            continue
        tab.setdefault(k, {}).setdefault(side, []).append(r["ms"])
print("kernel tokens n | A (main) ms | B (bdws2) ms | ring on B ms | A / B | ring / B")
for k in sorted(tab, key=str):
    a, b, r = tab[k].get("A", []), tab[k].get("B", []), tab[k].get("R", [])
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        mr = statistics.median(r) if r else float("nan")
        print(f"{k} | {ma:.4f} | {mb:.4f} | {mr:.4f} | {ma/mb:.3f} | {mr/mb:.3f}")
PY
tar czf "$OUT/bdws2.tar.gz" -C "$W" .
