#!/usr/bin/env bash
# Session 22: the Hopper attention's causal head sections (FLASHKIT_SM90_ATTENTION_SECTIONS=0
# turns them off) on one library (.device, main), causal cells only, runs in the order
# D S S D S D D S (D = default, S = sections off), one process each. Carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
n=0
for side in D S S D S D D S; do
  n=$((n + 1))
  env $([ "$side" = S ] && echo FLASHKIT_SM90_ATTENTION_SECTIONS=0) timeout -k 5 60 \
    python3 benchmarks/attention.py --lib "$LIB" --no-anchors --no-extra --causal 1 \
    --head-dims "${FK_AB_HDIMS:-64,128,256}" --seqlens "${FK_AB_SEQLENS:-512,1024,2048,4096}" \
    --reps 20 --warmup 3 --json "$OUT/sec_${side}_${n}.json" >/dev/null 2>&1
  echo "run $n $side rc $? (${SECONDS} s)"
done
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
tab = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/sec_*_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        tab.setdefault((r["head_dim"], r["seqlen"]), {}).setdefault(side, []).append(r["flashkit_tflops"])
print("head_dim seqlen | sections on (D) | off (S) | S/D")
for k in sorted(tab):
    d, s = tab[k]["D"], tab[k]["S"]
    print(f"{k} | {statistics.median(d):.1f} [{min(d):.0f}-{max(d):.0f}] | {statistics.median(s):.1f} [{min(s):.0f}-{max(s):.0f}] | {statistics.median(s) / statistics.median(d):.3f}")
PY
