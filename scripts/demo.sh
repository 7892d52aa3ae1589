#!/usr/bin/env bash
# make demo: what dattn does today, on the CPU. It lists the backends, resolves the attention roles of a
# Wan model under the default configuration and under a mixed per-role one, and compares every backend
# against the float64 reference on down-scaled Wan2.2 self- and cross-attention shapes.
set -euo pipefail
dattn=${1:-build/dattn}
section() { printf '\n== %s ==\n' "$1"; }

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
