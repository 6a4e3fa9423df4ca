#!/usr/bin/env bash
# envab_device.sh TAG LABEL VAR=VALUE [attention.py arguments]: one library (.device), its
# default (side D) against the same library with VAR=VALUE (side LABEL), one
# benchmarks/attention.py process per run in the order D L L D L D D L (--no-anchors
# --no-extra --reps 20 --warmup 3 plus the arguments given), then per cell the median and range
# of each side and their ratio. Run from the repository root on the device machine, carry .device.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
tag=$1 label=$2 setting=$3
shift 3
n=0
for side in D "$label" "$label" D "$label" D D "$label"; do
  n=$((n + 1))
  env $([ "$side" != D ] && echo "$setting") timeout -k 5 60 \
    python3 benchmarks/attention.py --lib "$LIB" --no-anchors --no-extra --reps 20 --warmup 3 \
    "$@" --json "$OUT/${tag}_${side}_${n}.json" >/dev/null 2>&1
  echo "run $n $side rc $? (${SECONDS} s)"
done
python3 - "$OUT" "$tag" "$label" "$setting" <<'PY'
import glob, json, os, statistics, sys
out, tag, label, setting = sys.argv[1:]
tab = {}
for f in sorted(glob.glob(f"{out}/{tag}_*_*.json")):
    side = os.path.basename(f)[len(tag) + 1:].split("_")[0]
    for r in json.load(open(f))["rows"]:
        tab.setdefault((r["head_dim"], r["seqlen"]), {}).setdefault(side, []).append(r["flashkit_tflops"])
print(f"head_dim seqlen | default (D) | {setting} ({label}) | {label}/D")
for k in sorted(tab):
    d, e = tab[k]["D"], tab[k][label]
    md, me = statistics.median(d), statistics.median(e)
    print(f"{k} | {md:.1f} [{min(d):.0f}-{max(d):.0f}] | {me:.1f} [{min(e):.0f}-{max(e):.0f}] | {me / md:.3f}")
PY
