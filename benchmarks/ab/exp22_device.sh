#!/usr/bin/env bash
# (As run in session 22 on branch exp22 = main's attention change + branch persist80; on main the
# sm80 GEMM side runs main's kernel, FLASHKIT_SM80_GEMM_PERSISTENT and
# FLASHKIT_SM90_ATTENTION_NARROW do nothing, and the persistent-tiles test case is absent.)
# Session 22: one device call for two branches merged into one build (B, .device) against
# main's library (A, .device-b/lib.so.gz):
#   fastidx22: the Hopper attention's tile numbering by multiply-high divisors (AttnArgs::index32);
#   persist80: the sm80-class GEMM persistent, with a direct register-to-global epilogue and the
#              next tile's first k-tiles requested before it.
# Run from the repository root on the device machine, carry .device and .device-b (gpu-check's
# --build-only on the merged branch, .device/model and .device/python removed).
#   FK_AB_HDIMS (64,128,256), FK_AB_SEQLENS (512,1024,2048,4096), FK_AB_REPS (20),
#   FK_AB_GEMM_SHAPES (the sm80 misses and 8192^3), FK_AB_SKIP_TESTS=1 skips the checks.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
ab_stage
T=.device/bin/flashkit_tests_gpu
if [ "${FK_AB_SKIP_TESTS:-0}" != 1 ]; then
  echo "== B: checks"
  export LD_LIBRARY_PATH=$PWD/.device/lib
  timeout -k 5 120 $T "[sm90][sanitize],sm90 attention: causal tile order in L2-sized head sections,sm90 attention: head dims x masks x GQA (batched)" 2>&1 | tail -n 2
  FLASHKIT_SM90_ATTENTION_INDEX64=1 timeout -k 5 90 $T \
    "sm90 attention: causal tile order in L2-sized head sections,[sm90][sanitize]" 2>&1 | tail -n 2
  timeout -k 5 150 $T "sm80 gemm: persistent tiles, direct and staged epilogues in one call,sm80 gemm: every epilogue on every output dtype,sm80 gemm: column-major D with a bias along the swapped problem's M,sm80 gemm: strided batch and broadcast,sm80 gemm: batch 65536 x (8 64 8) above the 65535 grid limit,sm80 gemm: mid tiles split along K for skinny problems" 2>&1 | tail -n 2
  timeout -k 5 90 compute-sanitizer --tool memcheck $T "sm80 gemm: every epilogue on every output dtype,sm80 gemm: strided batch and broadcast" 2>&1 | grep -E "passed|failed|SUMMARY" | tail -n 2
  unset LD_LIBRARY_PATH
  echo "== checks done (${SECONDS} s)"
fi
attn() {
  local side=$1 round=$2 lib=$3
  timeout -k 5 120 python3 benchmarks/attention.py --lib "$lib" --no-anchors --no-extra \
    --head-dims "${FK_AB_HDIMS:-64,128,256}" --seqlens "${FK_AB_SEQLENS:-512,1024,2048,4096}" \
    --reps "${FK_AB_REPS:-20}" --warmup 3 --json "$OUT/attn_${side}${round}.json" >/dev/null 2>&1
  echo "attention rc $? (${SECONDS} s)"
}
gemm() {
  local side=$1 round=$2 lib=$3
  timeout -k 5 90 python3 benchmarks/gemm.py --lib "$lib" --family sm80 --dtype bf16 fp16 \
    --shapes ${FK_AB_GEMM_SHAPES:-4096x4096x4096 8192x8192x1024 4096x12288x4096 8192x8192x8192} \
    --reps 10 --warmup 3 --json "$OUT/gemm80_${side}${round}.json" >/dev/null 2>&1
  echo "gemm rc $? (${SECONDS} s)"
}
both() { attn "$@"; gemm "$@"; }
ab_rounds both
# B alone: unmasked head_dim 128 (and 96) calls on 128-key tiles (FLASHKIT_SM90_ATTENTION_NARROW=1)
# against the 176-key tiles they take (96 takes 128 either way: a control), order N W W N.
narrow() {
  local tag=$1
  shift
  env "$@" timeout -k 5 90 python3 benchmarks/attention.py --lib .device/lib/libflashkit.so \
    --no-anchors --no-extra --head-dims 96,128 --seqlens 512,1024,2048,4096 --causal 0 \
    --reps "${FK_AB_REPS:-20}" --warmup 3 --json "$OUT/narrow_${tag}.json" >/dev/null 2>&1
  echo "narrow $tag rc $? (${SECONDS} s)"
}
narrow N1 FLASHKIT_SM90_ATTENTION_NARROW=1
narrow W1 FLASHKIT_SM90_ATTENTION_NARROW=0
narrow W2 FLASHKIT_SM90_ATTENTION_NARROW=0
narrow N2 FLASHKIT_SM90_ATTENTION_NARROW=1
python3 - "$OUT" <<'PY'
import json, sys, statistics
out = sys.argv[1]
def table(prefix, key, val, label, a="A", b="B"):
    """Runs {a}1 {b}1 {b}2 {a}2 of one benchmark: per cell the four values and b / a of the
    means, then the median, min and max of that ratio."""
    runs = {}
    for k in (a + "1", b + "1", b + "2", a + "2"):
        try:
            runs[k] = json.load(open(f"{out}/{prefix}_{k}.json"))["rows"]
        except Exception as e:
            print(f"{prefix}_{k}: {e}")
            return
    tab = {}
    for k, rows in runs.items():
        for r in rows:
            kk = key(r)
            if kk is not None and val(r):
                tab.setdefault(kk, {})[k] = val(r)
    ratios = []
    print(f"== {label}: {a}1 {a}2 | {b}1 {b}2 | {b}/{a}")
    for c in sorted(tab, key=str):
        t = tab[c]
        if len(t) < 4:
            continue
        x, y = (t[a + "1"] + t[a + "2"]) / 2, (t[b + "1"] + t[b + "2"]) / 2
        ratios.append(y / x)
        print(f"{c} | {t[a + '1']:.1f} {t[a + '2']:.1f} | {t[b + '1']:.1f} {t[b + '2']:.1f} | {y / x:.3f}")
    if ratios:
        print(f"{b}/{a} median {statistics.median(ratios):.3f} min {min(ratios):.3f} max {max(ratios):.3f}")
table("narrow", lambda r: (r["head_dim"], r["seqlen"]), lambda r: r["flashkit_tflops"], "B: 176-key (W) vs 128-key (N) tiles, unmasked", a="W", b="N")
table("attn", lambda r: (r["head_dim"], r["seqlen"], int(r["causal"])), lambda r: r.get("flashkit_tflops"), "attention TFLOP/s (hdim, seqlen, causal)")
def gkey(r):
    return tuple(str(r.get(k)) for k in ("kind", "dtype", "M", "N", "K"))
def gval(r):
    return r.get("flashkit_tflops")
table("gemm80", gkey, gval, "sm80 GEMM TFLOP/s (op, dtype, M, N, K)")
for k in ("A1", "B1", "B2", "A2"):
    try:
        rows = json.load(open(f"{out}/gemm80_{k}.json"))["rows"]
        print(k, "x torch:", " ".join(f"{r['kind'][5:] or 'plain'} {r['dtype']} {r['M']}x{r['N']}x{r['K']} {r['ratio']:.3f};" for r in rows))
    except Exception as e:
        print(k, e)
PY
