#!/usr/bin/env bash
# make demo: what dattn does today, on the CPU. The main job: text to video end to end on a small
# Wan-architecture pipeline with random weights (built here, nothing downloaded), a lossy backend
# validated against an exact one on that pipeline, then the attention system: the backends, how the
# roles of a Wan model resolve, and every backend against the float64 reference on down-scaled Wan2.2
# self- and cross-attention shapes.
set -euo pipefail
dattn=${1:-build/dattn}
out=${DEMO_DIR:-$(dirname "$dattn")/demo-model}
section() { printf '\n== %s ==\n' "$1"; }

# A Wan2.2-TI2V-shaped pipeline, scaled down to run in seconds on two cores: transformer 4 layers x
# 4 heads x 64 (dim 256), 16 latent channels; the residual, patchified Wan2.2 VAE at width 24; a
# 2-layer umT5; the golden tiny model's tokenizer and Wan's UniPC scheduler config (flow_shift 5).
section "a random-weight Wan pipeline (dattn make-pipeline)"
rm -rf "$out"
golden=tests/golden/wan_tiny/pipeline
"$dattn" make-pipeline --out "$out" \
  --transformer-config scripts/demo-model/transformer.json \
  --vae-config scripts/demo-model/vae.json \
  --text-encoder-config scripts/demo-model/text_encoder.json \
  --tokenizer "$golden/tokenizer" --scheduler-config "$golden/scheduler/scheduler_config.json"

# The weights are random, so the video is structured noise; what the demo shows is the whole path
# (umT5 -> 8 UniPC steps with classifier-free guidance -> VAE decode -> H.264) and its summary.
# OMP_WAIT_POLICY=passive: idle OpenMP threads sleep instead of spinning, which keeps the many short
# parallel regions of a small model fast when the cores are shared (8 s instead of 60 s measured on a
# busy 2-core machine).
# --device cpu: the default (auto) would run on a GPU where this binary has CUDA and one is visible.
section "text to video on the CPU (dattn generate)"
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$dattn" generate --device cpu --model "$out" \
  --prompt "A red fox trotting through fresh snow at dawn" --height 128 --width 192 --num-frames 17 \
  --num-inference-steps 8 --guidance-scale 5 --seed 0 \
  --output "$out/demo.mp4" --report "$out/demo.json"

# The same request twice: SPARSE_BLOCK (half the key blocks) as asked, then every role on FLASH_ATTN,
# compared on time and on the video (PSNR) and latents; fewer frames and steps to keep it short. With
# random weights attention is diffuse, so dropping half the blocks costs real quality (about 25 dB):
# exactly what this check exists to show before a lossy backend is trusted. Progress is on stderr.
section "validating SPARSE_BLOCK against FLASH_ATTN on the model (dattn generate --validate-against)"
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$dattn" generate --device cpu --model "$out" \
  --prompt "A red fox trotting through fresh snow at dawn" --height 128 --width 192 --num-frames 9 \
  --num-inference-steps 4 --guidance-scale 5 --seed 0 \
  --output "$out/demo-sparse.safetensors" --diffusion-attention-backend SPARSE_BLOCK \
  --diffusion-attention-config.default.extra.density 0.5 --validate-against FLASH_ATTN |
  sed -n '/^validation/,$p'

section "dattn backends"
"$dattn" backends

section "Wan roles under the default configuration (dattn resolve)"
"$dattn" resolve --role self --role cross

section "Wan roles with SAGE_ATTN for self-attention and TORCH_SDPA for cross-attention"
"$dattn" resolve --role self --role cross \
  --diffusion-attention-config.per_role.self.backend SAGE_ATTN \
  --diffusion-attention-config.per_role.cross.backend TORCH_SDPA

# Wan2.2-TI2V-5B attention has 24 heads of 128 and 11440 video tokens (+512 text tokens in cross);
# down-scaled here to 8 heads and 1024 tokens so the float64 reference runs in seconds on two cores.
section "self-attention, Wan2.2-5B heads x dim, 1024 tokens (SPARSE_BLOCK at density 0.25)"
"$dattn" attention --backend all --shape 1,1024,1024,8,128 --repeat 2 --seed 1

# Random Gaussian inputs make attention diffuse, the worst case for a block-sparse mask; video attention
# is local. --inputs local gives q and k a shared smooth function of position, so the trade-off shows.
section "SPARSE_BLOCK speed/quality trade-off on local (video-like) inputs, 2048 tokens"
for density in 1 0.5 0.25 0.1; do
  "$dattn" attention --backend SPARSE_BLOCK --inputs local --shape 1,2048,2048,4,128 --repeat 2 --seed 3 \
    --diffusion-attention-config.per_role.self.backend SPARSE_BLOCK \
    --diffusion-attention-config.per_role.self.extra.density "$density" | sed -n 3p | sed "s/^/density $density: /"
done
"$dattn" attention --backend FLASH_ATTN --inputs local --shape 1,2048,2048,4,128 --repeat 2 --seed 3 --dtype fp32 \
  | sed -n 3p | sed "s/^/dense reference: /"

section "cross-attention, 1024 video queries x 512 text keys (text padded: 77 valid)"
"$dattn" attention --backend all --role cross --shape 1,1024,512,8,128 --key-padding 77 --repeat 2 --seed 2
