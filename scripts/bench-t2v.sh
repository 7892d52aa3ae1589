#!/usr/bin/env bash
# Text to video at full size on the GPU: Wan2.2-TI2V-5B with random weights, the seed's example
# (704x1280, 49 frames, 30 steps, guidance 5, cuda bf16), one markdown table of the time per stage and
# the peak memory (scripts/bench_t2v_table.py).
#
#   scripts/bench-t2v.sh [--bin build/dattn] [--model DIR] [--steps N] [--height H] [--width W]
#                        [--num-frames N] [--out DIR] [--video FILE.safetensors] [-- GENERATE_FLAGS...]
#
# --model DIR: the random pipeline; written with `dattn make-pipeline` from configs/wan2.2-ti2v-5b/
#   when DIR has no model_index.json (about 23 GB; default /tmp/dattn-wan2.2-ti2v-5b-random).
# --steps N: fewer denoising steps for a quick check (default 30). --height/--width/--num-frames
#   shrink the video (default 704 x 1280 x 49), e.g. while the VAE decode is slow.
# --out DIR: report, logs and table (default $OUT when set, the device tool's folder, else
#   /tmp/dattn-t2v-bench). The video (530 MB of float frames) goes to --video, by default outside it;
#   a file already there is removed before the timed run (each run writes a new file).
# Flags after -- go to `dattn generate` (e.g. attention configuration flags).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
bin="$root/build/dattn"
model="/tmp/dattn-wan2.2-ti2v-5b-random"
steps=30 height=704 width=1280 frames=49
out="${OUT:-/tmp/dattn-t2v-bench}"
video=""
prompt="A cat walks on the grass, realistic"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --height) height="$2"; shift 2 ;;
    --width) width="$2"; shift 2 ;;
    --num-frames) frames="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --video) video="$2"; shift 2 ;;
    --prompt) prompt="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench-t2v.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "bench-t2v.sh: no dattn binary at '$bin' (--bin)" >&2; exit 2; }
mkdir -p "$out" || exit 2
video="${video:-/tmp/dattn-t2v-bench-video/wan22_ti2v_5b.safetensors}"
mkdir -p "$(dirname "$video")" || exit 2
cfg="$root/configs/wan2.2-ti2v-5b"

make_s=""
if [ ! -f "$model/model_index.json" ]; then
  if [ -e "$model" ] && [ -n "$(ls -A "$model" 2>/dev/null)" ]; then
    echo "bench-t2v.sh: '$model' exists without model_index.json (a half-written pipeline?); remove it" >&2
    exit 2
  fi
  echo "== writing the full-size random pipeline to $model"
  t0=$(date +%s.%N)
  "$bin" make-pipeline --out "$model" \
    --transformer-config "$cfg/transformer.json" --vae-config "$cfg/vae.json" \
    --text-encoder-config "$cfg/text_encoder.json" --tokenizer "$cfg/tokenizer" \
    --scheduler-config "$cfg/scheduler_config.json" \
    --dtype bf16 --text-encoder-dtype bf16 2>&1 | tee "$out/make_pipeline.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "bench-t2v.sh: make-pipeline failed ($rc); removing the partial $model" >&2
    rm -rf "$model"
    exit "$rc"
  fi
  make_s=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
  du -sh "$model"/* 2>/dev/null | tee -a "$out/make_pipeline.log"
fi

# Device memory as the driver sees it (CUDA context, pools, cuBLASLt workspaces included), sampled
# every 100 ms; the report's device peak counts dattn's tensors only.
sampler=""
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>/dev/null
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$out/gpu_memory_mib.csv" 2>/dev/null &
  sampler=$!
fi

# Every run writes a new file, as a user's first run does: the previous run's video is removed and
# flushed first, outside the timed process. Replacing an existing 530 MB output frees its pages inside the
# writer's rename; on the H200 machine that took the "writing" stage from about 20 ms to 0.3-0.4 s
# (bench/notes/loading.md). The sync also keeps an earlier run's writeback from throttling this one.
rm -f "$video"
sync
echo "== dattn generate: ${width}x${height}, $frames frames, $steps steps, guidance 5, cuda bf16"
"$bin" generate --model "$model" --prompt "$prompt" \
  --height "$height" --width "$width" --num-frames "$frames" --num-inference-steps "$steps" \
  --guidance-scale 5 --seed 0 --device cuda --dtype bf16 \
  --output "$video" --report "$out/report.json" "${extra[@]}" >"$out/generate.log" 2>&1
status=$?
[ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
tail -n 25 "$out/generate.log"
if [ "$status" -ne 0 ]; then
  echo "bench-t2v.sh: dattn generate failed ($status); see $out/generate.log" >&2
  exit "$status"
fi

args=("$out/report.json" --out "$out/t2v_bench.md")
[ -f "$out/gpu.txt" ] && args+=(--gpu "$(head -n1 "$out/gpu.txt")")
[ -s "$out/gpu_memory_mib.csv" ] && args+=(--gpu-memory "$out/gpu_memory_mib.csv")
[ -n "$make_s" ] && args+=(--make-pipeline-s "$make_s")
echo
python3 "$here/bench_t2v_table.py" "${args[@]}"
