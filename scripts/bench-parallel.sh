#!/usr/bin/env bash
# Issue 24's speed table: the seed's command on one GPU and in each multi-rank mode, in one call, each a
# cold `dattn generate` (the ranks started by dattn itself) with --op-times, then one markdown table
# (bench_parallel_table.py): denoising speed-up against the one-GPU run, median step, the collectives'
# share of the denoising ops ("communication"), rank 0's peak device memory, and the video's difference
# from the one-GPU run.
#
#   scripts/bench-parallel.sh [--bin build/dattn] [--family wan|hv15] [--model DIR] [--out DIR]
#                             [--modes one,cfg2,ulysses2,tp2] [--steps N] [--height H --width W --num-frames N]
#                             [--device cuda|cpu] [-- FLAGS...]
#
# --family picks the seed's request: wan (704x1280, 49 frames, guidance 5) or hv15 (480x832, 33 frames,
#   guidance 6). --model: a diffusers pipeline (the random full-size ones of bench-t2v.sh and
#   bench-hv15-t2v.sh; default /dev/shm/wan or /tmp/dattn-hv15-480p-random). --steps: default 30;
#   --height, --width, --num-frames replace the family's size.
# --device cpu with a tiny pipeline checks the script itself (e.g. --model tests/golden/wan_tiny/pipeline
#   --device cpu --steps 2 --height 64 --width 96 --num-frames 9).
# Modes: one (no parallel flag), cfg2 (--cfg-parallel-size 2), ulysses2 (--ulysses-degree 2), tp2
#   (--tensor-parallel-size 2), tp2cfg2, ulysses2cfg2 (4 ranks). Videos go to --videos (default
#   /tmp/dattn-parallel-videos, outside --out: 530 MB each at Wan's size). Flags after -- go to every run.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(dirname "$here")/build/dattn" family=wan model="" out="${OUT:-/tmp/dattn-parallel-bench}" steps=30
modes=one,cfg2,ulysses2,tp2 device=cuda videos=/tmp/dattn-parallel-videos extra=() height="" width="" frames=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --family) family="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --height) height="$2"; shift 2 ;;
    --width) width="$2"; shift 2 ;;
    --num-frames) frames="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --videos) videos="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench-parallel.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$family" in
  wan) request=(--prompt "A cat walks on the grass, realistic" --guidance-scale 5)
       size=(704 1280 49) model="${model:-/dev/shm/wan}" ;;
  hv15) request=(--prompt "A dog running across a field of golden wheat." --guidance-scale 6.0)
        size=(480 832 33) model="${model:-/tmp/dattn-hv15-480p-random}" ;;
  *) echo "bench-parallel.sh: --family '$family': expected wan or hv15" >&2; exit 2 ;;
esac
request+=(--height "${height:-${size[0]}}" --width "${width:-${size[1]}}" --num-frames "${frames:-${size[2]}}")
[ -f "$model/model_index.json" ] || { echo "bench-parallel.sh: $model has no model_index.json (make it with bench-t2v.sh or bench-hv15-t2v.sh)" >&2; exit 2; }
dtype=bf16
[ "$device" = cpu ] && dtype=fp32
mkdir -p "$out" "$videos" || exit 2
# The runs' ranks share the host: OpenMP threads wait passively; root may run mpirun (containers).
export OMP_WAIT_POLICY=passive OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
: >"$out/modes.txt"
IFS=, read -ra list <<<"$modes"
for mode in "${list[@]}"; do
  case "$mode" in
    one) flags=() ;;
    cfg2) flags=(--cfg-parallel-size 2) ;;
    ulysses2) flags=(--ulysses-degree 2) ;;
    tp2) flags=(--tensor-parallel-size 2) ;;
    tp2cfg2) flags=(--tensor-parallel-size 2 --cfg-parallel-size 2) ;;
    ulysses2cfg2) flags=(--ulysses-degree 2 --cfg-parallel-size 2) ;;
    *) echo "bench-parallel.sh: unknown mode '$mode'" >&2; status=2; continue ;;
  esac
  rm -f "$videos/$mode.safetensors"
  "$bin" generate --model "$model" "${request[@]}" --num-inference-steps "$steps" --seed 42 --device "$device" \
    --dtype "$dtype" --op-times --output "$videos/$mode.safetensors" --report "$out/$mode.json" "${flags[@]}" \
    "${extra[@]}" >"$out/$mode.log" 2>&1
  rc=$?
  echo "$mode $rc" >>"$out/modes.txt"
  echo "$mode: rc=$rc $(grep -E '^  (total|denoising) ' "$out/$mode.log" | tr -s ' ' | tr '\n' ' ')"
  [ "$rc" -eq 0 ] || { status=1; tail -5 "$out/$mode.log"; }
done
python3 "$here/bench_parallel_table.py" "$out" "$videos" | tee "$out/parallel.md"
exit "$status"
