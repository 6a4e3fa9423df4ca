#!/usr/bin/env bash
# Session 22: no head sections for the 192-row tiles. A = main a2ebe52's library
# (.device-b/lib.so.gz), B = the change (.device). Checks on B: [attention][sm90] as is and with
# FLASHKIT_SM90_ATTENTION_WG3=2 (short masked calls on the 192-row tiles, now without sections);
# then causal head_dim 64 (512..16k keys) and 128 (control) in the order A B B A.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
export LD_LIBRARY_PATH=$PWD/.device/lib
timeout -k 5 150 .device/bin/flashkit_tests_gpu "[attention][sm90]" 2>&1 | tail -n 2
FLASHKIT_SM90_ATTENTION_WG3=2 timeout -k 5 150 .device/bin/flashkit_tests_gpu "[attention][sm90]" 2>&1 | tail -n 2
unset LD_LIBRARY_PATH
echo "== checks done (${SECONDS} s)"
bench() {
  local side=$1 round=$2 lib=$3
  for d in 64 128; do
    timeout -k 5 60 python3 benchmarks/attention.py --lib "$lib" --no-anchors --no-extra --causal 1 \
      --head-dims $d --seqlens "$([ $d = 64 ] && echo 512,1024,2048,4096,8192,16384 || echo 4096,8192)" \
      --reps 20 --warmup 3 --json "$OUT/s2_${side}${round}_$d.json" >/dev/null 2>&1
  done
  echo "rc $? (${SECONDS} s)"
}
ab_rounds bench
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
tab = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/s2_*.json")):
    side = os.path.basename(f).split("_")[1][0]
    for r in json.load(open(f))["rows"]:
        tab.setdefault((r["head_dim"], r["seqlen"]), {}).setdefault(side, []).append(r["flashkit_tflops"])
for k in sorted(tab):
    a, b = tab[k]["A"], tab[k]["B"]
    print(f"{k} | A {' '.join(f'{x:.1f}' for x in a)} | B {' '.join(f'{x:.1f}' for x in b)} | B/A {statistics.mean(b) / statistics.mean(a):.3f}")
PY
