#!/usr/bin/env bash
# Every GPU test in one go, on the GPU machine: the test binaries (CUDA tests run instead of skipping),
# `dattn backends --device cuda`, then compute-sanitizer memcheck and racecheck on the CUDA kernel tests.
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

# The CUDA kernel tests under the sanitizers (racecheck is slow: the focused kernel tests only).
kernel_tests='*Cuda*'
limit=${SANITIZER_TIMEOUT:-900}  # seconds per sanitizer run; a timeout counts as a failure
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    step "compute-sanitizer --tool $tool ($kernel_tests)"
    filter=$kernel_tests
    [ "$tool" = racecheck ] && filter='FlashCuda*:FlashHopperCuda*:CudaSdpa*:SparseCuda*:BlockMaskCuda*'
    if timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 99 "$build/tests/dattn_tests_attention" \
        --gtest_brief=1 --gtest_filter="$filter" >"$logs/sanitizer-$tool.log" 2>&1; then
      tail -n 4 "$logs/sanitizer-$tool.log"
    else
      status=1; grep -E "ERROR SUMMARY|Invalid|Race|FAILED|Error" "$logs/sanitizer-$tool.log" | head -30
    fi
  done
else
  echo "compute-sanitizer not found: sanitizer runs skipped"; status=1
fi
echo; [ $status -eq 0 ] && echo "gpu-check: all passed" || echo "gpu-check: FAILURES (logs in $logs)"
exit $status
