#!/usr/bin/env bash
# Session 22: causal head_dim 64 below 4096 keys on the 192-row tiles (FLASHKIT_SM90_ATTENTION_WG3=2,
# now without head sections) against the table's 128-row tiles (default), one library (.device,
# main a58b568), one process per run, order D W W D W D D W. Carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
n=0
for side in D W W D W D D W; do
  n=$((n + 1))
  env $([ "$side" = W ] && echo FLASHKIT_SM90_ATTENTION_WG3=2) timeout -k 5 60 \
    python3 benchmarks/attention.py --lib "$LIB" --no-anchors --no-extra --causal 1 \
    --head-dims 64 --seqlens 512,1024,2048,4096 --reps 20 --warmup 3 \
    --json "$OUT/wg3_${side}_${n}.json" >/dev/null 2>&1
  echo "run $n $side rc $? (${SECONDS} s)"
done
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
tab = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/wg3_*_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        tab.setdefault((r["head_dim"], r["seqlen"]), {}).setdefault(side, []).append((r["flashkit_tflops"], r.get("variant")))
for k in sorted(tab):
    d = [x[0] for x in tab[k]["D"]]; w = [x[0] for x in tab[k]["W"]]
    print(f"{k} | 128-row (D) {statistics.median(d):.1f} [{min(d):.0f}-{max(d):.0f}] | 192-row (W) {statistics.median(w):.1f} [{min(w):.0f}-{max(w):.0f}] | W/D {statistics.median(w) / statistics.median(d):.3f}")
PY
