#!/usr/bin/env bash
# The seed's Wan2.2 example end to end (704x1280, 49 frames, 30 steps, guidance 5, cuda bf16), one cold
# process per run (scripts/bench-t2v.sh), in the variants issue 23 compares, with the GPU's SM clock and
# power sampled beside them (nvidia-smi, every 200 ms), then one table of all runs (bench_wan_e2e_table.py).
#
#   scripts/bench-wan-e2e.sh [--bin build/dattn] [--model DIR] [--out DIR] [--runs default,off,fp8]
#
# Runs, in the order given (a name may repeat): default (the command as users type it: loads ahead),
# off (--load-ahead off: each component loaded in its stage), fp8 (--quantization fp8). --model: the
# random pipeline (written by the first run when missing; /dev/shm keeps its bytes in memory, as a warm
# page cache). --out: one folder per run plus smi.csv and e2e.md (default $OUT, else /tmp/dattn-wan-e2e).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(dirname "$here")/build/dattn" model=/dev/shm/wan runs=default,off,fp8 out="${OUT:-/tmp/dattn-wan-e2e}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench-wan-e2e.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out" || exit 2
smi=""
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader,nounits \
    -lms 200 >"$out/smi.csv" 2>/dev/null &
  smi=$!
fi
status=0 i=0
: >"$out/runs.txt"
IFS=, read -ra list <<<"$runs"
for name in "${list[@]}"; do
  case "$name" in
    default) flags=() ;;
    off) flags=(--load-ahead off) ;;
    fp8) flags=(--quantization fp8) ;;
    *) echo "bench-wan-e2e.sh: unknown run '$name' (default, off or fp8)" >&2; status=2; continue ;;
  esac
  i=$((i + 1))
  dir="$out/$i-$name"
  start=$(date +%s.%N)
  "$here/bench-t2v.sh" --bin "$bin" --model "$model" --out "$dir" -- "${flags[@]}" >"$dir.log" 2>&1 || status=1
  echo "$i-$name $start $(date +%s.%N)" >>"$out/runs.txt"
  grep -E "^  (total|median step) " "$dir/generate.log" 2>/dev/null | sed "s/^/$i-$name:/"
done
[ -n "$smi" ] && kill "$smi" 2>/dev/null && wait "$smi" 2>/dev/null
python3 "$here/bench_wan_e2e_table.py" "$out" | tee "$out/e2e.md"
exit "$status"
