#!/usr/bin/env bash
# Every GPU test in one go, on the GPU machine: the test binaries (CUDA tests run instead of skipping),
# `dattn backends --device cuda`, then compute-sanitizer memcheck on the CUDA tests of every binary and racecheck on the attention kernels.
# Usage: scripts/gpu-check.sh [BUILD_DIR]   (default: build; build it first with CUDA, here or there)
# Logs go to $OUT (the device tool's output folder) when set, else /tmp/dattn-gpu-check.
set -uo pipefail
build=${1:-build}
logs=${OUT:-/tmp/dattn-gpu-check}
mkdir -p "$logs"
# Binaries may have been built on another machine: point them at this tree's data and binary.
export DATTN_GOLDEN_DIR=$PWD/tests/golden DATTN_BINARY=$PWD/$build/dattn
status=0
step() { echo; echo "== $1"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$logs/device.txt"
"$build/dattn" backends --device cuda | tee -a "$logs/device.txt"

for t in "$build"/tests/dattn_tests_*; do
  [ -x "$t" ] && [ -f "$t" ] || continue  # skip ctest's .cmake files beside the binaries
  name=$(basename "$t")
  step "$name"
  if "$t" --gtest_brief=1 >"$logs/$name.log" 2>&1; then tail -n 3 "$logs/$name.log"; else
    status=1; grep -E "FAILED|Failure|error" "$logs/$name.log" | head -40; fi
done

# The CUDA tests of every binary under memcheck (attention, ops, models, pipeline, ...); racecheck (slow)
# on the focused attention kernel tests only.
limit=${SANITIZER_TIMEOUT:-900}  # seconds per sanitizer run; a timeout counts as a failure
sanitize() {  # tool binary filter
  local log="$logs/sanitizer-$1-$(basename "$2").log"
  step "compute-sanitizer --tool $1 $(basename "$2") ($3)"
  if timeout "$limit" compute-sanitizer --tool "$1" --error-exitcode 99 "$2" --gtest_brief=1 --gtest_filter="$3" \
      >"$log" 2>&1; then
    tail -n 4 "$log"
  else
    status=1; grep -E "ERROR SUMMARY|Invalid|Race|FAILED|Error" "$log" | head -30
  fi
}
if command -v compute-sanitizer >/dev/null; then
  for t in "$build"/tests/dattn_tests_*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    # FrameOps runs each case on the CPU and, when present, on CUDA.
    "$t" --gtest_list_tests --gtest_filter='*Cuda*:FrameOps*' | grep -q '^  ' || continue  # no CUDA tests in it
    sanitize memcheck "$t" '*Cuda*:FrameOps*'
  done
  sanitize racecheck "$build/tests/dattn_tests_attention" 'FlashCuda*:FlashHopperCuda*:CudaSdpa*:SparseCuda*:BlockMaskCuda*'
else
  echo "compute-sanitizer not found: sanitizer runs skipped"; status=1
fi
echo; [ $status -eq 0 ] && echo "gpu-check: all passed" || echo "gpu-check: FAILURES (logs in $logs)"
exit $status
