#!/usr/bin/env bash
# The pipeline's denoising step against the transformer's forward, and end to end against an earlier
# binary, in one command on the GPU (the architecture issue's checks): Wan2.2-TI2V-5B with random
# weights, the seed's example (704x1280, 49 frames, 30 steps, guidance 5, cuda bf16).
#
#   scripts/bench-pipeline-step.sh --bin build/dattn --forward-bin build/bench/dattn_wan_forward_bench
#                                  [--old-bin OLD/dattn] [--model DIR] [--steps N] [--out DIR]
#
# Runs, in this order (the pipeline's files are in the page cache after the first, which writes them
# when DIR has none): dattn generate with --guidance batched, then sequential; the old binary's
# generate (no --guidance flag) when given; the forward benchmark at batch 1 and 2 with per-token
# timesteps, as the pipeline calls it. Writes pipeline_step.md (scripts/bench_pipeline_step_table.py).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="" fwd="" old="" model="/tmp/dattn-wan2.2-ti2v-5b-random" steps=30 out="${OUT:-/tmp/dattn-pipeline-step}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --forward-bin) fwd="$2"; shift 2 ;;
    --old-bin) old="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench-pipeline-step.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] && [ -x "$fwd" ] || { echo "bench-pipeline-step.sh: --bin and --forward-bin are required" >&2; exit 2; }
mkdir -p "$out"
status=0
for mode in batched sequential; do
  "$here/bench-t2v.sh" --bin "$bin" --model "$model" --steps "$steps" --out "$out/new-$mode" \
    -- --guidance "$mode" >"$out/new-$mode.log" 2>&1 || status=1
done
if [ -n "$old" ]; then
  "$here/bench-t2v.sh" --bin "$old" --model "$model" --steps "$steps" --out "$out/old" >"$out/old.log" 2>&1 || status=1
fi
for b in 1 2; do
  "$fwd" --model "$model/transformer" --batch "$b" --timestep-per-token true --iters 7 \
    --json "$out/forward-b$b.json" >"$out/forward-b$b.log" 2>&1 || status=1
done
python3 "$here/bench_pipeline_step_table.py" "$out" --out "$out/pipeline_step.md" || status=1
exit $status
