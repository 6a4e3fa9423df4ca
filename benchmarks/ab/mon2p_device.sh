#!/usr/bin/env bash
# Session 25, one device call for two branches built together (mon2p = main + bdswz + the
# unfused Monarch variant). A = .device-b's library (main 9827ea1: padded blockdiag / fused
# Monarch rows), B = .device's (mon2p).
#   1. on B: flashkit_tests_gpu "[monarch]" (fused sm80 cases with the unfused variant switched
#      off, the unfused cases, sm90, AUTO, blockdiag p 16..256); memcheck and racecheck on the
#      small blockdiag and unfused cases.
#   2. bdswz: python3 benchmarks/monarch.py (n 1024 4096 16384, 16384 tokens), order A B B A,
#      FLASHKIT_MONARCH_UNFUSED=0 on both sides (so the forced sm80 row is the fused kernel,
#      swizzled on B); medians of the blockdiag rows and the forced fused sm80 rows, A / B.
#   3. unfused against fused on B: monarch.py --family sm80 --quick --no-dense, n 1024 4096
#      16384, tokens 16384 65536, FLASHKIT_MONARCH_UNFUSED=0 (fused) and unset (unfused), order
#      F U U F; then the unfused variant at n = 16384 / 16384 tokens with scratch budgets of 8,
#      32, 128 and 512 MiB (FLASHKIT_MONARCH_UNFUSED_CHUNK_MB).
# Everything in $OUT/mon2p.tar.gz plus the printed summaries. Carry .device and .device-b.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
W=/tmp/fk-mon2p
mkdir -p "$W"
bin=.device/bin/flashkit_tests_gpu
export LD_LIBRARY_PATH=$PWD/.device/lib
timeout -k 10 240 "$bin" "[monarch]" > "$W/t_monarch.log" 2>&1
echo "[monarch]: $(grep -E '^(All tests passed|test cases:)' "$W/t_monarch.log" | tail -n1) (${SECONDS} s)"
grep -B3 -A14 FAILED "$W/t_monarch.log" | head -40
for tool in memcheck racecheck; do
  timeout -k 10 150 compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
    "sm80 blockdiag linear,sm80 monarch_unfused: small cases*" > "$W/$tool.log" 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool.log" | tail -n1) (${SECONDS} s)"
done
n=0
for side in A B B A; do
  n=$((n + 1))
  lib=.device/lib/libflashkit.so
  [ "$side" = A ] && lib=.device-b/lib/libflashkit.so
  FLASHKIT_MONARCH_UNFUSED=0 LD_LIBRARY_PATH=$(dirname $lib) timeout -k 5 150 python3 benchmarks/monarch.py \
    --lib "$lib" --n 1024 4096 16384 --tokens 16384 --reps 7 --json "$W/m_${side}_$n.json" > "$W/m_${side}_$n.log" 2>&1
  echo "bdswz run $n $side rc $? (${SECONDS} s)"
done
n=0
for side in F U U F; do
  n=$((n + 1))
  env=""
  [ "$side" = F ] && env="FLASHKIT_MONARCH_UNFUSED=0"
  env $env timeout -k 5 150 python3 benchmarks/monarch.py --lib .device/lib/libflashkit.so --family sm80 \
    --quick --no-dense --n 1024 4096 16384 --tokens 16384 65536 --reps 7 --json "$W/u_${side}_$n.json" \
    > "$W/u_${side}_$n.log" 2>&1
  echo "unfused run $n $side rc $? (${SECONDS} s)"
done
for mb in 8 32 128 512; do
  FLASHKIT_MONARCH_UNFUSED_CHUNK_MB=$mb timeout -k 5 100 python3 benchmarks/monarch.py \
    --lib .device/lib/libflashkit.so --family sm80 --quick --no-dense --n 4096 16384 --tokens 16384 \
    --reps 7 --json "$W/c_${mb}.json" > "$W/c_${mb}.log" 2>&1
  echo "chunk $mb MiB rc $? (${SECONDS} s)"
done
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import glob, json, os, statistics, sys
w = sys.argv[1]
def table(pattern, keyf, title, sides):
    tab = {}
    for f in sorted(glob.glob(f"{w}/{pattern}")):
        side = os.path.basename(f).split("_")[1]
        for r in json.load(open(f))["rows"]:
            for k, ms in keyf(r):
                tab.setdefault(k, {}).setdefault(side, []).append(ms)
    print(title)
    a_, b_ = sides
    for k in sorted(tab, key=str):
        a, b = tab[k].get(a_, []), tab[k].get(b_, [])
        if a and b:
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"{k} | {ma:.4f} [{min(a):.4f}-{max(a):.4f}] | {mb:.4f} [{min(b):.4f}-{max(b):.4f}] | {ma/mb:.3f}")
def bd(r):
    if r.get("op") == "blockdiag_linear":
        yield ("blockdiag", r["tokens"], r["n"]), r["ms"]
    elif r.get("sm80_ms") is not None and r.get("op") == "monarch":
        yield ("monarch sm80 fused forced", r["tokens"], r["n"]), r["sm80_ms"]
table("m_*_*.json", bd, "== bdswz: kernel tokens n | A ms [range] | B ms [range] | A / B", "AB")
def un(r):
    if r.get("op") == "monarch":
        yield ("monarch sm80 family", r["tokens"], r["n"], r.get("variant")), r["ms"]
# F and U rows carry different variant names: key without the variant for the ratio.
def un2(r):
    if r.get("op") == "monarch":
        yield ("monarch sm80 family", r["tokens"], r["n"]), r["ms"]
table("u_*_*.json", un2, "== fused (F) vs unfused (U): tokens n | F ms | U ms | F / U", "FU")
for f in sorted(glob.glob(f"{w}/u_*_*.json")) + sorted(glob.glob(f"{w}/c_*.json")):
    for r in json.load(open(f))["rows"]:
        if r.get("op") == "monarch":
            print(os.path.basename(f), r["tokens"], r["n"], r.get("variant"), f"{r['ms']:.4f} ms",
                  f"{r['gbps']:.0f} GB/s", f"bmm {r['bmm_ms']:.3f} ms", f"copy {r['copy_gbps']:.0f} GB/s",
                  f"rel {r['rel_l2_vs_fp32']:.1e}", f"nan {r['nan']}")
PY
tar czf "$OUT/mon2p.tar.gz" -C "$W" .
