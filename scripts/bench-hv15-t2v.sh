#!/usr/bin/env bash
# HunyuanVideo-1.5 text to video at full size on the GPU with random weights: the seed's command
# (480x832, 33 frames, 30 steps, guidance 6, seed 42, cuda bf16) once per attention configuration, each
# lossy one with --validate-against FLASH_ATTN; the reports (JSON) and logs go to --out.
#
#   scripts/bench-hv15-t2v.sh [--bin build/dattn] [--model DIR] [--steps N] [--num-frames N] [--out DIR]
#                             [--configs flash,flash-batched,sage,sparse]
# flash-batched runs the two guidance branches as one batch-2 forward (--guidance batched).
# --model DIR: the random pipeline, written with `dattn make-pipeline` from configs/hunyuanvideo1.5-480p-t2v/
#   when DIR has no model_index.json (about 37 GB; default /tmp/dattn-hv15-480p-random). The tokenizers are
#   the tiny test ones (tests/golden/hv15_tiny/pipeline/tokenizer*): token counts differ from the real
#   model's (its chat-template prefix is 182 tokens here, 108 with the real tokenizer).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
bin="$root/build/dattn" model="/tmp/dattn-hv15-480p-random" steps=30 frames=33 out="${OUT:-/tmp/dattn-hv15-bench}"
configs="flash,sage,sparse"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --num-frames) frames="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --configs) configs="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench-hv15-t2v.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out" || exit 2
cfg="$root/configs/hunyuanvideo1.5-480p-t2v" tiny="$root/tests/golden/hv15_tiny/pipeline"
if [ ! -f "$model/model_index.json" ]; then
  t0=$SECONDS
  "$bin" make-pipeline --out "$model" --transformer-config "$cfg/transformer.json" --vae-config "$cfg/vae.json" \
    --text-encoder-config "$cfg/text_encoder.json" --text-encoder-2-config "$cfg/text_encoder_2.json" \
    --tokenizer "$tiny/tokenizer" --tokenizer-2 "$tiny/tokenizer_2" --scheduler-config "$cfg/scheduler_config.json" \
    --guider-config "$cfg/guider_config.json" --dtype bf16 >"$out/make_pipeline.log" 2>&1 || { cat "$out/make_pipeline.log"; exit 1; }
  echo "make-pipeline: $((SECONDS - t0)) s"
fi
run() {  # NAME, then generate flags
  local name="$1"; shift
  "$bin" generate --model "$model" --prompt "A dog running across a field of golden wheat." --height 480 --width 832 \
    --num-frames "$frames" --num-inference-steps "$steps" --seed 42 --guidance-scale 6.0 --device cuda --dtype bf16 \
    --output "/tmp/hv15-$name.safetensors" --report "$out/$name.json" "$@" >"$out/$name.log" 2>&1
  echo "$name rc=$?"; grep -E "^  (load|text|denoising|vae|writing|total|median)|PSNR|psnr|peak" "$out/$name.log" | head -30
}
IFS=, read -ra list <<<"$configs"
for c in "${list[@]}"; do
  case "$c" in
    flash) run flash --diffusion-attention-backend FLASH_ATTN ;;
    flash-batched) run flash-batched --diffusion-attention-backend FLASH_ATTN --guidance batched ;;
    sage) run sage --diffusion-attention-config.per_role.self.backend SAGE_ATTN --validate-against FLASH_ATTN ;;
    sparse) run sparse --diffusion-attention-config.per_role.self.backend SPARSE_BLOCK \
              --diffusion-attention-config.per_role.self.extra.density 0.25 --validate-against FLASH_ATTN ;;
    *) echo "bench-hv15-t2v.sh: unknown configuration '$c'" >&2 ;;
  esac
done
