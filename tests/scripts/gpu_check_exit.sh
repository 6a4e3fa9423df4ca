#!/usr/bin/env bash
# scripts/gpu-check.sh --run-only must exit 1 when a step fails and 0 when every step passes or
# is skipped (its summary is read by people, its exit status by the A/B scripts). Runs the real
# script against a stub test binary and a stub nvidia-smi in a scratch copy of the repository's
# scripts; no GPU needed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/scripts" "$work/.device/lib" "$work/.device/bin" "$work/stub"
cp "$root/scripts/gpu-check.sh" "$work/scripts/"
cat > "$work/stub/nvidia-smi" <<'STUB'
#!/bin/sh
echo "stub GPU, 0, 1 MiB, 1 MHz"
STUB
# The test binary: lists two cases (none for a filter naming no-such-tag); each shard (-f FILE)
# passes, or fails when STUB_FAIL is set.
cat > "$work/.device/bin/flashkit_tests_gpu" <<'STUB'
#!/usr/bin/env bash
case "$*" in
  *--list-test-names-only*no-such-tag*) exit 0 ;;
  *--list-test-names-only*) printf 'case a\ncase b\n'; exit 0 ;;
esac
n=1
[ "${1:-}" = "-f" ] && n=$(wc -l < "$2")
if [ -n "${STUB_FAIL:-}" ]; then echo "test cases: $n | 0 passed | $n failed"; exit 1; fi
echo "All tests passed ($n assertions in $n test cases)"
STUB
chmod +x "$work/stub/nvidia-smi" "$work/.device/bin/flashkit_tests_gpu"
fails=0
check() {  # expected-exit description env...
  local want=$1 what=$2
  shift 2
  (cd "$work" && env PATH="$work/stub:$PATH" OUT="$work/out" FK_GPU_CHECK_SANITIZER=0 \
     FK_GPU_CHECK_PYTHON=0 FK_GPU_CHECK_DEMO=0 FK_GPU_CHECK_VARIANTS=0 "$@" \
     bash scripts/gpu-check.sh --run-only >"$work/log" 2>&1)
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; sed 's/^/  | /' "$work/log"; fails=$((fails + 1))
  else
    echo "ok: $what (exit $got)"
  fi
}
check 0 "every shard passes"
check 1 "failing shards" STUB_FAIL=1
check 0 "later steps skipped by the time budget" FK_GPU_CHECK_BUDGET=0 FK_GPU_CHECK_VARIANTS=1
check 1 "no test matches the filter" FK_GPU_CHECK_CPP_FILTER="[no-such-tag]"
exit $((fails > 0))
