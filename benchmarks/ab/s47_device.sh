#!/usr/bin/env bash
# Session 47, one device call (RESULTS: "fp8 at head_dim 128: exp2 on the FMA pipe, ..."):
# (1) `[fftconv][sm80][reg]` on the library staged in .device (its output fell outside the
# tool's 12,000-character tail that session: it was re-run in a call of its own);
# (2) the fp8 A/B runs with the library of 4b68640 + both fp8 patches, gzip -> xz into
# .device-b/lib.so.xz (two libraries do not fit one call's 64 MiB otherwise), written over
# .device's library file. SM_STOP / LD_STOP: seconds after which no new softmax / transpose
# run starts. Run: SM_STOP=120 LD_STOP=170 bash benchmarks/ab/s47_device.sh
# (carry .device, .device-b).
cd "$(dirname "$0")/../.."
. benchmarks/ab/stage.sh
dev_stage
T=.device/bin/flashkit_tests_gpu
timeout -k 5 150 $T "[fftconv][sm80][reg]" 2>&1 | grep -E -A 12 'FAILED|^(All tests passed|test cases:)' | head -30
echo "== memcheck small (${SECONDS} s)"
timeout -k 5 60 compute-sanitizer --tool memcheck $T "sm80 fftconv_reg: small case for memcheck" 2>&1 | tail -n 2
echo "== patched library (${SECONDS} s)"
python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" .device-b/lib.so.xz "$(readlink -f .device/lib/libflashkit.so)"
cat .device-b/BUILD_INFO
for v in 4 16 20; do
  echo "== FLASHKIT_SM90_FP8_SOFTMAX=$v: fp8 small case"
  FLASHKIT_SM90_FP8_SOFTMAX=$v timeout -k 5 60 "$T" "gpu attention fp8: small case" 2>&1 | grep -E -A 12 'FAILED|^(All tests passed|test cases:)' | head -n 14
done
for v in 0 16 4 20 20 4 16 0; do
  [ $SECONDS -gt ${SM_STOP:-230} ] && { echo "skip softmax $v (${SECONDS} s)"; continue; }
  echo "== FLASHKIT_SM90_FP8_SOFTMAX=$v (${SECONDS} s)"
  FLASHKIT_SM90_FP8_SOFTMAX=$v timeout -k 5 40 python3 benchmarks/attention_fp8.py --lib .device/lib \
    --head-dim 128 --seqlens 1024 4096 16384 --reps 10 --json "$OUT/fp8sm_$v.json" 2>&1 | grep -v '^json'
done
echo "== transpose small case (${SECONDS} s)"
FLASHKIT_SM90_FP8_TRANSPOSE=1 FLASHKIT_SM90_FP8_VT=2 timeout -k 5 60 "$T" "gpu attention fp8: small case" 2>&1 | tail -n 2
for m in 0 1 1 0; do
  for hd in 128 256; do
    [ $SECONDS -gt ${LD_STOP:-340} ] && { echo "skip hd $hd m $m (${SECONDS} s)"; continue; }
    echo "== head_dim $hd, FLASHKIT_SM90_FP8_TRANSPOSE=$m (${SECONDS} s)"
    FLASHKIT_SM90_FP8_TRANSPOSE=$m FLASHKIT_SM90_FP8_VT=2 timeout -k 5 40 python3 benchmarks/attention_fp8.py \
      --lib .device/lib --head-dim $hd --seqlens 1024 4096 16384 --reps 10 --json "$OUT/ldsm_${hd}_$m.json" 2>&1 | grep -v '^json'
  done
done
echo "== done (${SECONDS} s)"
