#!/usr/bin/env bash
# Issue 23's open question, for the GPU machine: what holds the row norms at Wan's shape (11440 x 3072
# bf16) below 80% of the copy rate. Profiles one launch of each norm that takes a long-row kernel
# (row_norm_block_kernel, row_norm_block_rows_kernel for the plain norms, or row_norm_lean_kernel under
# DATTN_ROW_NORM_KERNEL=lean|lean40, set in the environment) in dattn_row_ops_bench with
# Nsight Compute at the GPU's own clocks: speed of light, occupancy, launch statistics, warp states (what
# the warps wait on), instruction counts, memory workload and the schedulers.
#
#   scripts/ncu-row-norm.sh [--bench build/bench/dattn_row_ops_bench] [--out DIR]
#
# The kernel's template arguments in each report name the norm (NormKind) and the dtype. The bench runs
# each op 3 warm-up + 20 timed times in a fixed order; one launch from the middle of each op's run is taken
# (--launch-skip 23 * i + 10): layer_norm_modulated, gated_residual, residual_layer_norm_modulated, the
# rotary norm across heads, rms_norm, layer_norm. A reordered bench shifts this; the names say what ran.
# Output: DIR/ncu-row-norm.txt (default $OUT, else /tmp/dattn-ncu-row-norm).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bench="$(dirname "$here")/build/bench/dattn_row_ops_bench" out="${OUT:-/tmp/dattn-ncu-row-norm}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) bench="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "ncu-row-norm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v ncu >/dev/null || { echo "ncu-row-norm.sh: ncu (Nsight Compute) is not on PATH" >&2; exit 2; }
[ -x "$bench" ] || { echo "ncu-row-norm.sh: $bench is not built (cmake --build build --target dattn_row_ops_bench)" >&2; exit 2; }
mkdir -p "$out" || exit 2
report="$out/ncu-row-norm.txt"
: >"$report"
status=0
for i in 0 1 2 3 4 5; do
  ncu --clock-control none --kernel-name "regex:row_norm_(block|lean)" --launch-skip $((23 * i + 10)) --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section InstructionStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    "$bench" --tokens 11440 --dim 3072 --heads 24 --iters 20 >>"$report" 2>&1 || status=1
done
grep -E "row_norm_(block|lean)|Duration|DRAM Throughput|Executed Instructions  |Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Eligible Warps|No Eligible|Warp Cycles Per Issued" \
  "$report" | head -120
exit "$status"
