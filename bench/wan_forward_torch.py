#!/usr/bin/env python3
"""The Wan transformer forward (diffusers' WanTransformer3DModel, T2V/TI2V, scalar timestep) written in
plain PyTorch eager with random bf16 weights: the baseline dattn's forward is measured against, in the
same command on the same GPU. It computes the same operations in the same order as diffusers (patch
conv, condition embedder, 3D RoPE, blocks with self-attention, cross-attention and a GELU-tanh FFN,
output norm and projection, unpatchify) with torch SDPA on cuDNN; weights are random, so only time and
memory are meaningful.

  python3 bench/wan_forward_torch.py --config CONFIG.json [--frames 13 --height 44 --width 80]
      [--text 512] [--warmup 2] [--iters 5] [--json OUT.json]
(frames/height/width are the latent grid; the defaults are Wan2.2-TI2V-5B at 704x1280, 49 frames.)
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def rope_tables(head_dim, grid, theta=10000.0, device="cuda"):
    # Wan splits the head dim into (t, h, w) parts: h and w get 2*(D//6) each, t the rest.
    hw = 2 * (head_dim // 6)
    dims = [head_dim - 2 * hw, hw, hw]
    parts = []
    for axis, (d, n) in enumerate(zip(dims, grid)):
        inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)
        ang = torch.outer(torch.arange(n, dtype=torch.float64, device=device), inv)  # [n, d/2]
        shape = [1, 1, 1, d // 2]
        shape[axis] = n
        parts.append(ang.view(*shape).expand(grid[0], grid[1], grid[2], d // 2))
    ang = torch.cat(parts, dim=-1).reshape(-1, head_dim // 2)
    return ang.cos().float().repeat_interleave(2, -1), ang.sin().float().repeat_interleave(2, -1)


def apply_rope(x, cos, sin):  # x [B, S, H, D]
    x1, x2 = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    c, s = cos[None, :, None, 0::2], sin[None, :, None, 1::2]
    out = torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1).flatten(-2)
    return out.type_as(x)


def timestep_embedding(t, dim=256):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class Weights:
    def __init__(self, cfg, device="cuda", dtype=torch.bfloat16):
        g = torch.Generator(device=device).manual_seed(0)
        self.dtype = dtype

        def w(*shape, scale=0.02):
            return (torch.randn(*shape, generator=g, device=device, dtype=torch.float32) * scale).to(dtype)

        inner = cfg["num_attention_heads"] * cfg["attention_head_dim"]
        pt, ph, pw = cfg["patch_size"]
        cin, cout, ffn, text, freq = cfg["in_channels"], cfg["out_channels"], cfg["ffn_dim"], cfg["text_dim"], cfg["freq_dim"]
        self.inner = inner
        self.patch_w, self.patch_b = w(inner, cin, pt, ph, pw), w(inner)
        self.t1, self.t1b, self.t2, self.t2b = w(inner, freq), w(inner), w(inner, inner), w(inner)
        self.tp, self.tpb = w(6 * inner, inner), w(6 * inner)
        self.x1, self.x1b, self.x2, self.x2b = w(inner, text), w(inner), w(inner, inner), w(inner)
        self.blocks = []
        for _ in range(cfg["num_layers"]):
            b = {}
            for a in ("attn1", "attn2"):
                for p in ("q", "k", "v", "o"):
                    b[f"{a}.{p}"], b[f"{a}.{p}.b"] = w(inner, inner), w(inner)
                b[f"{a}.nq"], b[f"{a}.nk"] = 1 + w(inner), 1 + w(inner)
            b["norm2.w"], b["norm2.b"] = 1 + w(inner), w(inner)
            b["ff1"], b["ff1.b"], b["ff2"], b["ff2.b"] = w(ffn, inner), w(ffn), w(inner, ffn), w(inner)
            b["sst"] = w(1, 6, inner).float()
            self.blocks.append(b)
        self.out_sst = w(1, 2, inner).float()
        self.proj_w, self.proj_b = w(cout * pt * ph * pw, inner), w(cout * pt * ph * pw)


def attention(x, ctx, b, prefix, heads, eps, cos=None, sin=None):
    q = F.rms_norm(F.linear(x, b[prefix + ".q"], b[prefix + ".q.b"]), (x.shape[-1],), b[prefix + ".nq"], eps)
    k = F.rms_norm(F.linear(ctx, b[prefix + ".k"], b[prefix + ".k.b"]), (x.shape[-1],), b[prefix + ".nk"], eps)
    v = F.linear(ctx, b[prefix + ".v"], b[prefix + ".v.b"])
    q, k, v = (t.unflatten(2, (heads, -1)) for t in (q, k, v))
    if cos is not None:
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)
    return F.linear(o.flatten(2), b[prefix + ".o"], b[prefix + ".o.b"])


def forward(W, cfg, latents, timestep, text, rope):
    heads, eps = cfg["num_attention_heads"], cfg["eps"]
    pt, ph, pw = cfg["patch_size"]
    B, _, f, h, w_ = latents.shape
    grid = (f // pt, h // ph, w_ // pw)
    x = F.conv3d(latents, W.patch_w, W.patch_b, stride=(pt, ph, pw)).flatten(2).transpose(1, 2)
    temb = F.linear(F.silu(F.linear(timestep_embedding(timestep).to(W.dtype), W.t1, W.t1b)), W.t2, W.t2b)
    tproj = F.linear(F.silu(temb), W.tp, W.tpb).unflatten(1, (6, -1))
    ctx = F.linear(F.gelu(F.linear(text, W.x1, W.x1b), approximate="tanh"), W.x2, W.x2b)
    cos, sin = rope
    for b in W.blocks:
        shift, scale, gate, c_shift, c_scale, c_gate = (b["sst"] + tproj.float()).chunk(6, dim=1)
        n = (F.layer_norm(x.float(), (W.inner,), eps=eps) * (1 + scale) + shift).type_as(x)
        x = (x.float() + attention(n, n, b, "attn1", heads, eps, cos, sin) * gate).type_as(x)
        n = F.layer_norm(x.float(), (W.inner,), b["norm2.w"].float(), b["norm2.b"].float(), eps).type_as(x)
        x = x + attention(n, ctx, b, "attn2", heads, eps)
        n = (F.layer_norm(x.float(), (W.inner,), eps=eps) * (1 + c_scale) + c_shift).type_as(x)
        ff = F.linear(F.gelu(F.linear(n, b["ff1"], b["ff1.b"]), approximate="tanh"), b["ff2"], b["ff2.b"])
        x = (x.float() + ff.float() * c_gate).type_as(x)
    shift, scale = (W.out_sst + temb.float()[:, None]).chunk(2, dim=1)
    x = ((F.layer_norm(x.float(), (W.inner,), eps=eps) * (1 + scale) + shift)).type_as(x)
    x = F.linear(x, W.proj_w, W.proj_b)
    cout = cfg["out_channels"]
    x = x.reshape(B, *grid, pt, ph, pw, cout).permute(0, 7, 1, 4, 2, 5, 3, 6)
    return x.flatten(6, 7).flatten(4, 5).flatten(2, 3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--frames", type=int, default=13)
    ap.add_argument("--height", type=int, default=44)
    ap.add_argument("--width", type=int, default=80)
    ap.add_argument("--text", type=int, default=512)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    cfg = json.load(open(a.config))
    torch.manual_seed(0)
    W = Weights(cfg)
    torch.cuda.synchronize()
    weights_bytes = torch.cuda.memory_allocated()
    latents = torch.randn(1, cfg["in_channels"], a.frames, a.height, a.width, device="cuda", dtype=torch.bfloat16)
    text = torch.randn(1, a.text, cfg["text_dim"], device="cuda", dtype=torch.bfloat16)
    t = torch.tensor([500.0], device="cuda")
    pt, ph, pw = cfg["patch_size"]
    rope = rope_tables(cfg["attention_head_dim"], (a.frames // pt, a.height // ph, a.width // pw))
    times = []
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad(), sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for i in range(a.warmup + a.iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            out = forward(W, cfg, latents, t, text, rope)
            e.record()
            torch.cuda.synchronize()
            if i >= a.warmup:
                times.append(s.elapsed_time(e))
    times.sort()
    res = {"median_ms": times[len(times) // 2], "min_ms": times[0], "iters": a.iters,
           "weights_gib": weights_bytes / 2**30, "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
           "tokens": (a.frames // pt) * (a.height // ph) * (a.width // pw), "output_shape": list(out.shape),
           "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    print(json.dumps(res))
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
