#!/usr/bin/env bash
# Session 25, branch bdws: cuda.sm80.blockdiag_linear with one block's w resident per CTA over a
# run of token tiles (stationary), against the item ring it replaces, in one library:
# FLASHKIT_BLOCKDIAG_STATIONARY=0 gives the ring (R), unset the stationary kernel (S).
#   1. flashkit_tests_gpu "[monarch]" (blockdiag cases in both modes, the unfused Monarch, which
#      runs two blockdiag passes); memcheck and racecheck on the blockdiag cases.
#   2. monarch.py --n 1024 4096 16384 --tokens 16384 65536, order R S S R: the blockdiag rows
#      and the Monarch rows (n = 16384: cuda.sm80.monarch_unfused), medians, R / S.
# Everything in $OUT/bdws.tar.gz plus the printed summary. Carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
W=/tmp/fk-bdws
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
timeout -k 10 200 "$bin" "[monarch]" > "$W/t_monarch.log" 2>&1
echo "[monarch]: $(grep -E '^(All tests passed|test cases:)' "$W/t_monarch.log" | tail -n1) (${SECONDS} s)"
grep -B3 -A14 FAILED "$W/t_monarch.log" | head -40
for tool in memcheck racecheck; do
  timeout -k 10 120 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm80 blockdiag linear*" > "$W/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool.log" | tail -n1) (${SECONDS} s)"
done
n=0
for side in R S S R; do
  n=$((n + 1))
  env=""
  [ "$side" = R ] && env="FLASHKIT_BLOCKDIAG_STATIONARY=0"
  env $env timeout -k 5 100 python3 benchmarks/monarch.py --lib "$LIB" --no-dense \
    --n 1024 4096 16384 --tokens 16384 65536 --reps 7 --json "$W/m_${side}_$n.json" > "$W/m_${side}_$n.log" 2>&1
  echo "run $n $side rc $? (${SECONDS} s)"
done
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import glob, json, os, statistics, sys
w = sys.argv[1]
tab = {}
for f in sorted(glob.glob(f"{w}/m_*_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        if r.get("op") == "blockdiag_linear":
            k = ("blockdiag", r["tokens"], r["n"])
        elif r.get("op") == "monarch":
            k = ("monarch " + r["variant"], r["tokens"], r["n"])
        else:
            continue
        tab.setdefault(k, {}).setdefault(side, []).append((r["ms"], r.get("gbps")))
print("kernel tokens n | ring ms [range] | stationary ms [range] | R / S | stationary GB/s")
for k in sorted(tab, key=str):
    a, b = tab[k].get("R", []), tab[k].get("S", [])
    if a and b:
        ma, mb = statistics.median(x for x, _ in a), statistics.median(x for x, _ in b)
        g = statistics.median(y for _, y in b if y is not None) if any(y for _, y in b) else float("nan")
        print(f"{k} | {ma:.4f} [{min(x for x,_ in a):.4f}-{max(x for x,_ in a):.4f}] | {mb:.4f} [{min(x for x,_ in b):.4f}-{max(x for x,_ in b):.4f}] | {ma/mb:.3f} | {g:.0f}")
PY
tar czf "$OUT/bdws.tar.gz" -C "$W" .
