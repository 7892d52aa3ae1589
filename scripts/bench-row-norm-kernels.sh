#!/usr/bin/env bash
# Issue 23's long-row norm kernels side by side on the GPU machine, one DATTN_ROW_NORM_KERNEL choice a process:
#  1. the CUDA norm tests (float64 references, bit-for-bit fused = two ops) under every choice;
#  2. dattn_row_ops_bench at Wan2.2-5B's (11440 x 3072) and HunyuanVideo-1.5's (14040 x 2048) widths, the
#     choices alternating within each round;
#  3. with --forward, the Wan2.2-5B forward (random bf16 weights, FLASH_ATTN) per choice beside the default;
#  4. with --sanitize, the norm tests under compute-sanitizer memcheck per choice.
#
#   scripts/bench-row-norm-kernels.sh [--kernels block2,rows2,lean,lean40] [--rounds 2] [--forward] [--sanitize]
#                                     [--build build] [--out DIR]
#
# Expects a CUDA build in --build (cmake -DDATTN_CUDA=on; the script builds the targets it runs). Output under
# DIR (default $OUT/row-norm-kernels, else /tmp/dattn-row-norm-kernels): tests_<k>.log, bench_<wan|hv>_<k>_r<n>.md,
# forward.md, memcheck_<k>.log, and summary.txt (what the terminal shows).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kernels=block2,rows2,lean,lean40 rounds=2 forward=0 sanitize=0 build="$root/build"
out="${OUT:+$OUT/row-norm-kernels}"
out="${out:-/tmp/dattn-row-norm-kernels}"
while [ $# -gt 0 ]; do
  case "$1" in
    --kernels) kernels="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --forward) forward=1; shift ;;
    --sanitize) sanitize=1; shift ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bench-row-norm-kernels.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-row-norm-kernels.sh: --rounds '$rounds': expected a positive count" >&2; exit 2; }
IFS=, read -r -a ks <<<"$kernels"
for k in "${ks[@]}"; do
  case "$k" in block2|block1|group|rows2|lean|lean40) ;; *)
    echo "bench-row-norm-kernels.sh: kernel '$k': expected block2, block1, group, rows2, lean or lean40" >&2; exit 2 ;;
  esac
done
[ -f "$build/CMakeCache.txt" ] || {
  echo "bench-row-norm-kernels.sh: $build is not configured; first:" >&2
  echo "  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDATTN_CUDA=on -DDATTN_CUDA_ARCHS=90a" >&2
  exit 2
}
mkdir -p "$out" || exit 2
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
t0=$(date +%s)
stamp() { say "[$(( $(date +%s) - t0 )) s] $*"; }

targets="dattn_tests_ops dattn_row_ops_bench"
[ "$forward" = 1 ] && targets="$targets dattn dattn_wan_forward_bench"
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" --target $targets >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
stamp "built $targets"

status=0
tests='OpsCudaNorm.*:OpsCudaModulation.*:OpsCudaNormSplit.*:OpsRowWindowCuda.*'
for k in "${ks[@]}"; do
  DATTN_ROW_NORM_KERNEL=$k timeout 120 "$build/tests/dattn_tests_ops" --gtest_filter="$tests" >"$out/tests_$k.log" 2>&1 || status=1
  stamp "tests $k: $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/tests_$k.log" | tr '\n' ' ')"
done

bench="$build/bench/dattn_row_ops_bench"
for r in $(seq 1 "$rounds"); do
  for k in "${ks[@]}"; do
    DATTN_ROW_NORM_KERNEL=$k timeout 30 "$bench" --tokens 11440 --dim 3072 --heads 24 >"$out/bench_wan_${k}_r$r.md" 2>&1 || status=1
    DATTN_ROW_NORM_KERNEL=$k timeout 30 "$bench" --tokens 14040 --dim 2048 --heads 16 >"$out/bench_hv_${k}_r$r.md" 2>&1 || status=1
  done
done
stamp "row bench, $rounds rounds"
for k in "${ks[@]}"; do
  say "== Wan width, $k, round $rounds"
  grep -E "^\| (copy|layer|gated|resid|rms_norm)" "$out/bench_wan_${k}_r$rounds.md" | cut -c1-100 | tee -a "$summary"
done

if [ "$forward" = 1 ]; then
  ckpt=/dev/shm/dattn-row-norm-kernels/wan
  timeout 120 "$build/dattn" make-checkpoint --config "$root/configs/wan2.2-ti2v-5b/transformer.json" --out "$ckpt" \
    --dtype bf16 >"$out/checkpoint.log" 2>&1 || { stamp "make-checkpoint failed (checkpoint.log)"; exit 1; }
  backends=FLASH_ATTN
  for k in "${ks[@]}"; do backends="$backends,FLASH_ATTN:DATTN_ROW_NORM_KERNEL=$k"; done
  mkdir -p "$out/forward"
  OUT="$out/forward" timeout 400 "$root/scripts/bench-forward.sh" --family wan --model "$ckpt" \
    --config "$root/configs/wan2.2-ti2v-5b/transformer.json" --backends "$backends" \
    --bin "$build/bench/dattn_wan_forward_bench" --out "$out/forward.md" \
    >"$out/forward.log" 2>&1 || status=1
  rm -rf "$ckpt"
  stamp "forward"
  grep -E "^\|" "$out/forward.md" | head -30 | tee -a "$summary"
fi

if [ "$sanitize" = 1 ]; then
  for k in "${ks[@]}"; do
    DATTN_ROW_NORM_KERNEL=$k timeout 300 compute-sanitizer --tool memcheck "$build/tests/dattn_tests_ops" \
      --gtest_filter='OpsCudaNorm.*:OpsCudaModulation.*' >"$out/memcheck_$k.log" 2>&1 || status=1
    stamp "memcheck $k: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/memcheck_$k.log" | tr '\n' ' ')"
  done
fi
exit "$status"
