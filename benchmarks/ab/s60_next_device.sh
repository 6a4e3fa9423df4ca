#!/usr/bin/env bash
# Session 60 (prepared, not run; for the next session). Carry [".device/lib", ".device/bin"]
# (.device = a build of main; write BUILD_INFO), ~200 s:
#   1. issue 7's FP8 rows (gemm.py --fp8), not run in session 60's H200 tables;
#   2. the fused bias + GELU rows under every Hopper schedule in one process (--ab-schedule):
#      at 8192^3 (128 k-tiles) the table picks the cooperative schedule, whose per-tile GELU
#      epilogue is exposed (fused 664-681 TF/s against 788-795 plain on the H200, 1.12-1.15x
#      torch's unfused pair against the 1.15x target); the 128-column ping-pong hides the
#      epilogue behind the other warpgroup's mainloop and was never timed on a fused 128-k-tile
#      call (heuristics.h pick_pingpong: only the 64-row ping-pong, 0.98-0.99 there);
#   3. the one-wave split bound on the final planner (6af4e9e): `[split]`, and GQA 32 / 4
#      head_dim 128 decode over 12 / 17 x 8k keys, default against SPLIT_KV=0 (batched and cache);
#   4. issue 6's weakest cells (head_dim 64 / 128, 512 / 1k keys, both masks) with the
#      copy-engine output stores (FLASHKIT_SM90_ATTENTION_TMA_STORE=1, A) against the default
#      register stores (B), A B B A: last timed in session 12, on a kernel much changed since
#      (the stores were then the largest part of the per-tile cost: skipping them 1.28x).
set -u
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
cat .device/BUILD_INFO 2>/dev/null
timeout -k 5 150 python3 benchmarks/gemm.py --lib "$LIB" --fp8 --skip-main --no-fused \
  --json "$OUT/gemm_fp8.json" > "$OUT/gemm_fp8.log" 2>&1
echo "fp8 rc $? (${SECONDS} s)"; grep -E "fp8|e4m3|ratio" "$OUT/gemm_fp8.log" | tail -12
timeout -k 5 200 python3 benchmarks/gemm.py --lib "$LIB" --shapes 8192x8192x8192 --ab-schedule \
  --json "$OUT/gemm_fused_ab.json" > "$OUT/gemm_fused_ab.log" 2>&1
echo "fused ab rc $? (${SECONDS} s)"
python3 - "$OUT/gemm_fused_ab.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    s = r.get("schedules") or {}
    base = r["flashkit_ms"]
    print(r["kind"], r["dtype"], r["M"], r["N"], r["K"], "default %.4f ms" % base,
          " ".join("%s %.4f (%.3f)" % (k, v["ms"], base / v["ms"]) for k, v in sorted(s.items())))
PY
kv_ab s FLASHKIT_ATTENTION_SPLIT_KV=0 "32,4,128" --kv-queries 1 --kv-pages 0 --kv-shapes 12x8192,17x8192 --kv-calls 10 \
  2>&1 | tail -3
GPU_CASE_LIMIT=90 gpu_case .device/bin/flashkit_tests_gpu "[split]"
AB_LIB_A=.device/lib/libflashkit.so AB_ENV_A=FLASHKIT_SM90_ATTENTION_TMA_STORE=1 AB_ENV_B=X=0 \
  attn_ab "A B B A" --family sm90 --head-dims 64,128 --seqlens 512,1024 --no-extra --no-anchors --reps 20
echo "== done (${SECONDS} s)"
