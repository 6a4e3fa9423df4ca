#!/usr/bin/env bash
# Session 25, second call for cuda.sm80.monarch_unfused (branch unfused = main + the variant,
# without bdswz, whose swizzled blockdiag was slower). One library (.device):
#   1. flashkit_tests_gpu "[monarch]"; memcheck and racecheck on the small blockdiag and unfused
#      cases.
#   2. fused (FLASHKIT_MONARCH_UNFUSED=0, F) against unfused (U) on the SM80 family:
#      monarch.py --family sm80 --quick --no-dense, n 1024 4096 16384, tokens 16384 65536, order
#      F U U F, default scratch budget (128 MiB).
#   3. the issue's table: monarch.py (AUTO; two-bmm, dense, sm80-forced, generic, blockdiag),
#      --reps 7, one run.
# Everything in $OUT/unfused.tar.gz plus the printed summaries. Carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
W=/tmp/fk-unfused
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
timeout -k 10 240 "$bin" "[monarch]" > "$W/t_monarch.log" 2>&1
echo "[monarch]: $(grep -E '^(All tests passed|test cases:)' "$W/t_monarch.log" | tail -n1) (${SECONDS} s)"
grep -B3 -A14 FAILED "$W/t_monarch.log" | head -40
for tool in memcheck racecheck; do
  timeout -k 10 150 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm80 blockdiag linear,sm80 monarch_unfused: small cases*" > "$W/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool.log" | tail -n1) (${SECONDS} s)"
done
n=0
for side in F U U F; do
  n=$((n + 1))
  env=""
  [ "$side" = F ] && env="FLASHKIT_MONARCH_UNFUSED=0"
  env $env timeout -k 5 150 python3 benchmarks/monarch.py --lib "$LIB" --family sm80 \
    --quick --no-dense --n 1024 4096 16384 --tokens 16384 65536 --reps 7 --json "$W/u_${side}_$n.json" \
    > "$W/u_${side}_$n.log" 2>&1
  echo "run $n $side rc $? (${SECONDS} s)"
done
timeout -k 5 240 python3 benchmarks/monarch.py --lib "$LIB" --reps 7 --json "$W/full.json" > "$W/full.log" 2>&1
echo "full table rc $? (${SECONDS} s)"
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import glob, json, os, statistics, sys
w = sys.argv[1]
tab = {}
for f in sorted(glob.glob(f"{w}/u_*_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        if r.get("op") == "monarch":
            tab.setdefault((r["tokens"], r["n"]), {}).setdefault(side, []).append(r)
print("tokens n | fused ms [range] | unfused ms [range] | F / U | unfused GB/s, % of 4.2 TB/s | two-bmm ms (x unfused)")
for k in sorted(tab):
    F, U = tab[k].get("F", []), tab[k].get("U", [])
    if F and U:
        f = [r["ms"] for r in F]; u = [r["ms"] for r in U]
        mf, mu = statistics.median(f), statistics.median(u)
        g = statistics.median([r["gbps"] for r in U]); b = statistics.median([r["bmm_ms"] for r in U])
        print(f"{k} | {mf:.4f} [{min(f):.4f}-{max(f):.4f}] | {mu:.4f} [{min(u):.4f}-{max(u):.4f}] | {mf/mu:.3f} | {g:.0f}, {100*g/4200:.0f}% | {b:.3f} ({b/mu:.1f}x) | {U[0]['variant']} rel {U[0]['rel_l2_vs_fp32']:.1e} nan {U[0]['nan']}")
PY
tail -n 16 "$W/full.log"
tar czf "$OUT/unfused.tar.gz" -C "$W" .
