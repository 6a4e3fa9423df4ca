#!/usr/bin/env bash
# Session 42: the fp8 attention kernel before (A = .device-b: main 22205f1's attention_fp8_sm90.cu
# object linked into main's library) and after (B = .device: main with fp8sign, whose
# per-tile test of the descale product's sign reorganised the kernel's SASS) the change that
# turns non-positive descale products into logits first. benchmarks/attention_fp8.py at
# head_dim 128 and 256 (default seqlens), one process per run, order A B B A.
# Carry .device (without its model) and .device-b (lib.so.xz). Everything in $OUT/fp8sign.tar.gz.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
W=/tmp/fk-fp8sign
mkdir -p "$W"
run_side() {  # SIDE ROUND LIB
  for hd in 128 256; do
    LD_LIBRARY_PATH=$(dirname "$3") timeout -k 5 150 python3 benchmarks/attention_fp8.py --lib "$(dirname "$3")" \
      --head-dim $hd --json "$W/f_$1_$2_$hd.json" > "$W/f_$1_$2_$hd.log" 2>&1
    echo "run $2 $1 hd $hd rc $? (${SECONDS} s)"
  done
}
ab_rounds run_side
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import glob, json, os, statistics, sys
w = sys.argv[1]
tab = {}
for f in sorted(glob.glob(f"{w}/f_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        k = (r["head_dim"], r["seqlen"], r["causal"])
        tab.setdefault(k, {}).setdefault(side, []).append(r["fp8_ms"])
print("head_dim seqlen causal | A fp8 ms | B fp8 ms | A / B")
for k in sorted(tab):
    a, b = tab[k].get("A", []), tab[k].get("B", [])
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{k} | {ma:.4f} ({', '.join(f'{x:.4f}' for x in a)}) | {mb:.4f} ({', '.join(f'{x:.4f}' for x in b)}) | {ma/mb:.3f}")
PY
tar czf "$OUT/fp8sign.tar.gz" -C "$W" .
