#!/usr/bin/env bash
# (As run in session 22 on branch exp22 = main's attention change + branch persist80; on main the
# sm80 GEMM side runs main's kernel, FLASHKIT_SM80_GEMM_PERSISTENT and
# FLASHKIT_SM90_ATTENTION_NARROW do nothing, and the persistent-tiles test case is absent.)
# Session 22, second call: more rounds for the two changes of exp22_device.sh (same staging:
# A = main's library in .device-b/lib.so.gz, B = branch exp22 in .device).
#   attention: A and B in the order A B B A B A A B (FK_AB_HDIMS, FK_AB_SEQLENS, FK_AB_REPS);
#   sm80 GEMM: A, B (persistent grid) and C (= B with FLASHKIT_SM80_GEMM_PERSISTENT=0: one CTA
#   per item, the direct epilogue without the prefetch) in the order A B C C B A A C B.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
lib_of() { [ "$1" = A ] && echo .device-b/lib/libflashkit.so || echo .device/lib/libflashkit.so; }
n=0
for side in A B B A B A A B; do
  n=$((n + 1))
  timeout -k 5 90 python3 benchmarks/attention.py --lib "$(lib_of $side)" --no-anchors --no-extra \
    --head-dims "${FK_AB_HDIMS:-64,128,256}" --seqlens "${FK_AB_SEQLENS:-512,1024,4096}" \
    --reps "${FK_AB_REPS:-30}" --warmup 3 --json "$OUT/attn_${side}_${n}.json" >/dev/null 2>&1
  echo "attention $n $side rc $? (${SECONDS} s)"
done
n=0
for side in A B C C B A A C B; do
  n=$((n + 1))
  env $([ "$side" = C ] && echo FLASHKIT_SM80_GEMM_PERSISTENT=0) timeout -k 5 90 \
    python3 benchmarks/gemm.py --lib "$(lib_of $side)" --family sm80 --dtype bf16 fp16 \
    --shapes ${FK_AB_GEMM_SHAPES:-4096x4096x4096 8192x8192x1024 4096x12288x4096 8192x8192x8192} \
    --reps 10 --warmup 3 --json "$OUT/gemm_${side}_${n}.json" >/dev/null 2>&1
  echo "gemm $n $side rc $? (${SECONDS} s)"
done
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
def collect(prefix, key, val):
    tab = {}
    for f in sorted(glob.glob(f"{out}/{prefix}_*_*.json")):
        side = os.path.basename(f).split("_")[1]
        for r in json.load(open(f))["rows"]:
            v = val(r)
            if v:
                tab.setdefault(key(r), {}).setdefault(side, []).append(v)
    return tab
def show(tab, sides, label):
    print(f"== {label}: median per side (runs), ratios to A")
    for c in sorted(tab, key=str):
        t = tab[c]
        a = statistics.median(t["A"])
        cells = " | ".join(f"{s} {statistics.median(t[s]):.1f} ({' '.join(f'{x:.0f}' for x in t[s])})" for s in sides if s in t)
        rat = " ".join(f"{s}/A {statistics.median(t[s]) / a:.3f}" for s in sides[1:] if s in t)
        print(f"{c}: {cells} | {rat}")
show(collect("attn", lambda r: (r["head_dim"], r["seqlen"], int(r["causal"])), lambda r: r.get("flashkit_tflops")), ["A", "B"], "attention TFLOP/s")
show(collect("gemm", lambda r: (r["kind"], r["dtype"], r["M"], r["N"], r["K"]), lambda r: r.get("flashkit_tflops")), ["A", "B", "C"], "sm80 GEMM TFLOP/s")
show(collect("gemm", lambda r: (r["kind"], r["dtype"], r["M"], r["N"], r["K"]), lambda r: r.get("ratio")), ["A", "B", "C"], "sm80 GEMM x torch (same process)")
PY
