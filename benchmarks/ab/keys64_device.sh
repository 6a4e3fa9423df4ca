#!/usr/bin/env bash
# Session 23: head_dim 256 on 64-key tiles (branch keys64). One library (.device), one device call:
#   1. flashkit_tests_gpu "[attention][sm90]" as built (64-key tiles up to 1024 keys) and with
#      FLASHKIT_SM90_ATTENTION_KEYS64=2 (every head_dim 256 case on them), side by side;
#      compute-sanitizer memcheck on "[sm90][sanitize]" with KEYS64=2.
#   2. benchmarks/attention.py, head_dim 256, 512-4096 keys, causal and not, --no-anchors
#      --reps 20: D (as built), O (KEYS64=0: 80-key tiles, main's choice), F (KEYS64=2), one
#      process per run, order D O F F O D; per cell medians and ratios.
# Carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout -k 10 200 "$bin" "[attention][sm90]" > "$OUT/t_default.log" 2>&1 &
  FLASHKIT_SM90_ATTENTION_KEYS64=2 timeout -k 10 200 "$bin" "[attention][sm90]" > "$OUT/t_keys64.log" 2>&1 &
  wait
  echo "default: $(grep -E '^(All tests passed|test cases:)' "$OUT/t_default.log" | tail -n1)"
  echo "KEYS64=2: $(grep -E '^(All tests passed|test cases:)' "$OUT/t_keys64.log" | tail -n1)"
  grep -h -B3 -A12 "FAILED" "$OUT"/t_*.log | head -40
  FLASHKIT_SM90_ATTENTION_KEYS64=2 timeout -k 10 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$bin" "[sm90][sanitize]" > "$OUT/memcheck.log" 2>&1
  tail -2 "$OUT/memcheck.log"
  echo "(${SECONDS} s)"
fi
n=0
for side in D O F F O D; do
  n=$((n + 1))
  case $side in D) s=FK_UNUSED=0 ;; O) s=FLASHKIT_SM90_ATTENTION_KEYS64=0 ;; F) s=FLASHKIT_SM90_ATTENTION_KEYS64=2 ;; esac
  env $s timeout -k 5 60 python3 benchmarks/attention.py --lib "$LIB" --family sm90 --head-dims 256 \
    --seqlens 512,1024,2048,4096 --no-anchors --no-extra --reps 20 --warmup 3 \
    --json "$OUT/k64_${side}_$n.json" > /dev/null 2>&1
  echo "run $n $side rc $? (${SECONDS} s)"
done
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
tab = {}
for f in sorted(glob.glob(f"{out}/k64_*_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        tab.setdefault((r["seqlen"], r["causal"]), {}).setdefault(side, []).append(r["flashkit_tflops"])
print("seqlen causal | D (as built) | O (80-key) | F (64-key) | D/O | F/O")
for k in sorted(tab):
    m = {s: statistics.median(v) for s, v in tab[k].items()}
    r = {s: f"{min(v):.0f}-{max(v):.0f}" for s, v in tab[k].items()}
    print(f"{k} | {m['D']:.1f} [{r['D']}] | {m['O']:.1f} [{r['O']}] | {m['F']:.1f} [{r['F']}] | {m['D'] / m['O']:.3f} | {m['F'] / m['O']:.3f}")
PY
