#!/usr/bin/env bash
# Prepared in session 56, NOT run: split-KV for causal query rows over a KV cache (branch
# csplit56, kept on main as benchmarks/ab/csplit56.patch; split_kv_plan.h, chunk_keys).
# Speculative decoding and short prefill chunks over a cache (2-128 causal rows per sequence)
# on few sequences ran one tile per (sequence, head) (or per packed head group) over all keys,
# far less than a wave: batch 1 x 32 heads = 32 CTAs on 132 SMs. Build the branch
# (`git am -3 benchmarks/ab/csplit56.patch` on main 256eb31 or later, `scripts/gpu-check.sh
# --build-only`; main's .device held that build at the end of session 56), carry
# [".device/lib", ".device/bin"]. ~300 s:
#   1. the split cases (`[kvcache][split]`: the new causal ones, and the chunked-prefill case,
#      now split), the causal small case under memcheck / racecheck, every `[kvcache]` case;
#   2. timing, one library: FLASHKIT_ATTENTION_SPLIT_KV=0 (A, never split) against the default
#      (B), A B B A, benchmarks/attention.py --only-kvcache (causal, bottom-right), 2-16 queries
#      over 1 x 32k / 2 x 16k / 4 x 8k / 8 x 8k keys, contiguous and 128-key pages, GQA 32 / 8
#      and 32 / 4 at head_dim 128 (8 x 8k: split only because the Hopper row counts packed
#      tiles, split_heads_per_tile). Per cell the median us of each side and B / A.
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
bin=.device/bin/flashkit_tests_gpu
GPU_CASE_LIMIT=150 gpu_case $bin "[kvcache][split]"
sanitize_case $bin memcheck "attention kvcache: causal split-KV small case"
sanitize_case $bin racecheck "attention kvcache: causal split-KV small case"
GPU_CASE_LIMIT=150 gpu_case $bin "[kvcache]"
# Session 56's test shapes moved back onto their paths after the merged rules (256eb31, not
# run on a GPU then): the varlen pairs cases and their small case under the sanitizers, the
# small packed KV-cache case (its paged half now packs by default) under the sanitizers.
pc="sm90 attention: varlen causal tiles in pairs per sequence"
GPU_CASE_LIMIT=120 gpu_case $bin "$pc"
FLASHKIT_SM90_ATTENTION_INDEX64=1 GPU_CASE_LIMIT=120 gpu_case $bin "$pc" "index64: pairs per sequence"
sanitize_case $bin memcheck "sm90 attention: varlen causal pairs, small"
sanitize_case $bin racecheck "sm90 attention: varlen causal pairs, small"
sanitize_case $bin memcheck "gpu kvcache: packed GQA tiles, small"
sanitize_case $bin racecheck "gpu kvcache: packed GQA tiles, small"
n=0
for side in A B B A; do
  n=$((n + 1))
  envv=X=1
  [ "$side" = A ] && envv=FLASHKIT_ATTENTION_SPLIT_KV=0
  for heads in 32,8,128 32,4,128; do
    env $envv timeout -k 5 100 python3 benchmarks/attention.py --lib "$LIB" --only-kvcache \
      --kv-heads $heads --kv-queries 2,4,8,16 --kv-pages 0,128 --kv-shapes 1x32768,2x16384,4x8192,8x8192 \
      --no-anchors --reps 20 --json "$OUT/c_${side}_${n}_${heads//,/-}.json" > "$OUT/c_${side}_${n}_${heads//,/-}.log" 2>&1 \
      || { echo "side $side run $n heads $heads failed:"; tail -5 "$OUT/c_${side}_${n}_${heads//,/-}.log"; }
  done
  echo "side $side run $n (${SECONDS} s)"
done
python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
tab = {}
for f in glob.glob(os.path.join(sys.argv[1], "c_*_*_*.json")):
    side = os.path.basename(f).split("_")[1]
    for r in json.load(open(f))["rows"]:
        k = (r["nheads"], r["nheads_k"], r["head_dim"], r["batch"], r["seqlen"], r["seqlen_q"], r["page"])
        tab.setdefault(k, {}).setdefault(side, []).append(r["flashkit_ms"] * 1e3)
print("H/Hk d B S Sq page | cache A us (SPLIT_KV=0) | B us | B/A")
med = lambda v: statistics.median(v) if v else float("nan")
for k in sorted(tab):
    a, b = med(tab[k].get("A", [])), med(tab[k].get("B", []))
    print(f"{k[0]}/{k[1]} {k[2]} {k[3]} {k[4]} {k[5]} {k[6]} | {a:.1f} | {b:.1f} | {b / a:.3f}")
PY
echo "== done (${SECONDS} s)"
