#!/usr/bin/env bash
# Session 23, after the rule (64-key tiles at head_dim 256 up to 512 keys, 1024 masked): the
# build's [attention][sm90] tests, memcheck on [sm90][sanitize], then the head_dim 256 rows of
# the standard grid against FA2 and cuDNN, three processes. Carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
timeout -k 10 150 "$bin" "[attention][sm90]" > "$OUT/t.log" 2>&1
echo "[attention][sm90]: $(grep -E '^(All tests passed|test cases:)' "$OUT/t.log" | tail -n1)"
grep -B3 -A12 FAILED "$OUT/t.log" | head -30
timeout -k 10 100 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" "[sm90][sanitize]" > "$OUT/memcheck.log" 2>&1
tail -1 "$OUT/memcheck.log"
echo "(${SECONDS} s)"
for i in 1 2 3; do
  timeout -k 5 60 python3 benchmarks/attention.py --lib "$LIB" --family sm90 --head-dims 256 \
    --reps 10 --no-extra --json "$OUT/g256_$i.json" > "$OUT/g256_$i.txt" 2>&1
  echo "run $i rc $? (${SECONDS} s)"
done
python3 - "$OUT" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
runs = [json.load(open(f))["rows"] for f in sorted(glob.glob(f"{out}/g256_*.json"))]
print("head_dim seqlen causal | flashkit | FA2 | cuDNN | fk/FA2 | fk/cuDNN median [range]")
for k in range(len(runs[0])):
    v = [r[k] for r in runs]
    rc = sorted(x["ratio_cudnn"] for x in v)
    print(f"| {v[0]['head_dim']} | {v[0]['seqlen']} | {'yes' if v[0]['causal'] else 'no'} | "
          f"{statistics.median(x['flashkit_tflops'] for x in v):.1f} | {statistics.median(x['flash_tflops'] for x in v):.1f} | "
          f"{statistics.median(x['cudnn_tflops'] for x in v):.1f} | {statistics.median(x['ratio_flash'] for x in v):.2f} | "
          f"{rc[len(rc) // 2]:.3f} [{rc[0]:.3f}-{rc[-1]:.3f}] |")
PY
