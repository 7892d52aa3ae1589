#!/usr/bin/env python3
"""The HunyuanVideo-1.5 transformer forward (diffusers' HunyuanVideo15Transformer3DModel, T2V) written in
plain PyTorch eager with random bf16 weights: the baseline dattn's forward is measured against, in the
same command on the same GPU. Same operations in the same order as diffusers (patch conv, time embedding,
token refiner over the Qwen text with its own timestep + pooled-text embedding, ByT5 projection,
cond-type embeddings, packing of valid text first, dual-stream blocks with per-head RMS norm, RoPE on the
video tokens and one joint SDPA, output norm and projection). Weights are random: only time and memory
mean anything.

--text-layout diffusers: the packed text stream holds all 729 + 256 + 1000 tokens and the joint attention
  takes diffusers' boolean [B, 1, S, S] mask (what a diffusers user runs; SDPA picks its kernel for a mask).
--text-layout trimmed: only the valid text tokens, no mask (the work dattn does), SDPA on cuDNN.

  python3 bench/hv15_forward_torch.py --config CONFIG.json [--frames 9 --height 30 --width 52]
      [--qwen-valid 128 --byt5-valid 16] [--text-layout diffusers|trimmed] [--json OUT.json]
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def rope_tables(axes, grid, theta, device="cuda"):
    parts_cos, parts_sin = [], []
    pos = torch.stack(torch.meshgrid(*[torch.arange(n, device=device, dtype=torch.float32) for n in grid], indexing="ij"))
    for i, d in enumerate(axes):
        freqs = 1.0 / (theta ** (torch.arange(0, d, 2, device=device, dtype=torch.float32)[: d // 2] / d))
        ang = torch.outer(pos[i].reshape(-1), freqs)
        parts_cos.append(ang.cos().repeat_interleave(2, 1))
        parts_sin.append(ang.sin().repeat_interleave(2, 1))
    return torch.cat(parts_cos, 1), torch.cat(parts_sin, 1)


def apply_rope(x, cos, sin):  # x [B, S, H, D], interleaved pairs
    xr, xi = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    rot = torch.stack([-xi, xr], dim=-1).flatten(3)
    return (x.float() * cos[None, :, None] + rot * sin[None, :, None]).type_as(x)


def timestep_embedding(t, dim=256):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class Weights:
    def __init__(self, cfg, device="cuda", dtype=torch.bfloat16):
        g = torch.Generator(device=device).manual_seed(0)

        def w(*shape, scale=0.02):
            return (torch.randn(*shape, generator=g, device=device, dtype=torch.float32) * scale).to(dtype)

        d = cfg["num_attention_heads"] * cfg["attention_head_dim"]
        hd = cfg["attention_head_dim"]
        mlp = int(d * cfg.get("mlp_ratio", 4.0))
        te, te2 = cfg["text_embed_dim"], cfg["text_embed_2_dim"]
        self.d, self.dtype = d, dtype
        lin = lambda o, i: (w(o, i), w(o))
        self.x = (w(d, cfg["in_channels"], 1, 1, 1), w(d))
        self.time = (lin(d, 256), lin(d, d))
        self.r_time, self.r_text, self.r_in = (lin(d, 256), lin(d, d)), (lin(d, te), lin(d, d)), lin(d, te)
        self.refiner = [dict(n1=(1 + w(d), w(d)), q=lin(d, d), k=lin(d, d), v=lin(d, d), o=lin(d, d), n2=(1 + w(d), w(d)),
                             f1=lin(mlp, d), f2=lin(d, mlp), ada=lin(2 * d, d)) for _ in range(cfg.get("num_refiner_layers", 2))]
        self.byt5 = dict(n=(1 + w(te2), w(te2)), l1=lin(2048, te2), l2=lin(2048, 2048), l3=lin(d, 2048))
        self.cond = w(3, d, scale=1.0)
        self.blocks = [dict(n1=lin(6 * d, d), n1c=lin(6 * d, d), q=lin(d, d), k=lin(d, d), v=lin(d, d), aq=lin(d, d),
                            ak=lin(d, d), av=lin(d, d), o=lin(d, d), ao=lin(d, d), nq=1 + w(hd), nk=1 + w(hd),
                            naq=1 + w(hd), nak=1 + w(hd), f1=lin(mlp, d), f2=lin(d, mlp), fc1=lin(mlp, d),
                            fc2=lin(d, mlp)) for _ in range(cfg["num_layers"])]
        self.norm_out = lin(2 * d, d)
        self.proj = lin(cfg["out_channels"], d)


def L(x, p):
    return F.linear(x, p[0], p[1])


def mlp_silu(x, p):
    return L(F.silu(L(x, p[0])), p[1])


def refine(W, cfg, text, mask, t):
    heads = cfg["num_attention_heads"]
    m = mask.float().unsqueeze(-1)
    pooled = ((text * m).sum(1) / m.sum(1)).to(text.dtype)
    temb = mlp_silu(timestep_embedding(t).to(text.dtype), W.r_time) + mlp_silu(pooled, W.r_text)
    h = L(text, W.r_in)
    s = mask.bool()
    am = (s[:, None, None, :] & s[:, None, :, None])
    for b in W.refiner:
        n = F.layer_norm(h, (W.d,), b["n1"][0], b["n1"][1], 1e-6)
        q, k, v = (L(n, b[p]).unflatten(2, (heads, -1)).transpose(1, 2) for p in ("q", "k", "v"))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=am).transpose(1, 2).flatten(2)
        gm, gf = L(F.silu(temb), b["ada"]).chunk(2, dim=1)
        h = h + L(a, b["o"]) * gm[:, None]
        h = h + L(F.silu(L(F.layer_norm(h, (W.d,), b["n2"][0], b["n2"][1], 1e-6), b["f1"])), b["f2"]) * gf[:, None]
    return h


def forward(W, cfg, latents, t, qwen, qmask, byt5, bmask, rope, layout):
    heads, eps, d = cfg["num_attention_heads"], 1e-6, W.d
    B, _, f, hh, ww = latents.shape
    x = F.conv3d(latents, W.x[0], W.x[1]).flatten(2).transpose(1, 2)
    temb = mlp_silu(timestep_embedding(t).to(W.dtype), W.time)
    if layout == "trimmed":  # only the valid tokens (right padding: a prefix), as dattn computes
        nq, nb = int(qmask.sum()), int(bmask.sum())
        qwen, qmask, byt5 = qwen[:, :nq], qmask[:, :nq], byt5[:, :nb]
    txt = refine(W, cfg, qwen, qmask, t) + W.cond[0]
    g = byt5
    g = F.layer_norm(g, (g.shape[-1],), W.byt5["n"][0], W.byt5["n"][1], 1e-5)
    g = L(F.gelu(L(F.gelu(L(g, W.byt5["l1"])), W.byt5["l2"])), W.byt5["l3"]) + W.cond[1]
    if layout == "trimmed":
        text, mask = torch.cat([g, txt], 1), None
    else:  # diffusers: [valid image (none in t2v), valid byt5, valid qwen, invalid image, invalid byt5, invalid qwen]
        img = torch.zeros(B, 729, d, device=x.device, dtype=x.dtype) + W.cond[2]
        bm, qm = bmask.bool()[0], qmask.bool()[0]
        text = torch.cat([g[:, bm], txt[:, qm], img, torch.zeros_like(g[:, ~bm]), torch.zeros_like(txt[:, ~qm])], 1)
        valid = torch.cat([torch.ones(x.shape[1], device=x.device, dtype=torch.bool), bm[bm], qm[qm],
                           torch.zeros(729, device=x.device, dtype=torch.bool), bm[~bm], qm[~qm]])
        mask = (valid[None, None, None, :] & valid[None, None, :, None])
    cos, sin = rope
    sv = x.shape[1]
    for b in W.blocks:
        sm, cm, gm, sf, cf, gf = L(F.silu(temb), b["n1"]).chunk(6, dim=1)
        tsm, tcm, tgm, tsf, tcf, tgf = L(F.silu(temb), b["n1c"]).chunk(6, dim=1)
        nx = F.layer_norm(x, (d,), eps=eps) * (1 + cm[:, None]) + sm[:, None]
        nt = F.layer_norm(text, (d,), eps=eps) * (1 + tcm[:, None]) + tsm[:, None]
        q = F.rms_norm(L(nx, b["q"]).unflatten(2, (heads, -1)), (cfg["attention_head_dim"],), b["nq"], eps)
        k = F.rms_norm(L(nx, b["k"]).unflatten(2, (heads, -1)), (cfg["attention_head_dim"],), b["nk"], eps)
        v = L(nx, b["v"]).unflatten(2, (heads, -1))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        aq = F.rms_norm(L(nt, b["aq"]).unflatten(2, (heads, -1)), (cfg["attention_head_dim"],), b["naq"], eps)
        ak = F.rms_norm(L(nt, b["ak"]).unflatten(2, (heads, -1)), (cfg["attention_head_dim"],), b["nak"], eps)
        av = L(nt, b["av"]).unflatten(2, (heads, -1))
        q, k, v = (torch.cat(p, 1).transpose(1, 2) for p in ((q, aq), (k, ak), (v, av)))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).flatten(2)
        x = x + L(o[:, :sv], b["o"]) * gm[:, None]
        text = text + L(o[:, sv:], b["ao"]) * tgm[:, None]
        n = F.layer_norm(x, (d,), eps=eps) * (1 + cf[:, None]) + sf[:, None]
        x = x + gf[:, None] * L(F.gelu(L(n, b["f1"]), approximate="tanh"), b["f2"])
        n = F.layer_norm(text, (d,), eps=eps) * (1 + tcf[:, None]) + tsf[:, None]
        text = text + tgf[:, None] * L(F.gelu(L(n, b["fc1"]), approximate="tanh"), b["fc2"])
    scale, shift = L(F.silu(temb), W.norm_out).chunk(2, dim=1)
    x = F.layer_norm(x, (d,), eps=eps) * (1 + scale)[:, None] + shift[:, None]
    x = L(x, W.proj)
    return x.reshape(B, f, hh, ww, -1).permute(0, 4, 1, 2, 3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--frames", type=int, default=9)
    ap.add_argument("--height", type=int, default=30)
    ap.add_argument("--width", type=int, default=52)
    ap.add_argument("--qwen-valid", type=int, default=128)
    ap.add_argument("--byt5-valid", type=int, default=16)
    ap.add_argument("--text-layout", choices=["diffusers", "trimmed"], default="diffusers")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    cfg = json.load(open(a.config))
    W = Weights(cfg)
    torch.cuda.synchronize()
    weights_bytes = torch.cuda.memory_allocated()
    dev, bf = "cuda", torch.bfloat16
    latents = torch.randn(1, cfg["in_channels"], a.frames, a.height, a.width, device=dev, dtype=bf)
    qwen = torch.randn(1, 1000, cfg["text_embed_dim"], device=dev, dtype=bf)
    byt5 = torch.randn(1, 256, cfg["text_embed_2_dim"], device=dev, dtype=bf)
    qmask = torch.zeros(1, 1000, device=dev, dtype=torch.int64)
    qmask[:, : a.qwen_valid] = 1
    bmask = torch.zeros(1, 256, device=dev, dtype=torch.int64)
    bmask[:, : a.byt5_valid] = 1
    t = torch.tensor([500.0], device=dev).to(bf)
    rope = rope_tables(cfg["rope_axes_dim"], (a.frames, a.height, a.width), cfg.get("rope_theta", 256.0))
    backends = [SDPBackend.CUDNN_ATTENTION] if a.text_layout == "trimmed" else \
        [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    times = []
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad(), sdpa_kernel(backends):
        for i in range(a.warmup + a.iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            out = forward(W, cfg, latents, t, qwen, qmask, byt5, bmask, rope, a.text_layout)
            e.record()
            torch.cuda.synchronize()
            if i >= a.warmup:
                times.append(s.elapsed_time(e))
    times.sort()
    res = {"median_ms": times[len(times) // 2], "min_ms": times[0], "iters": a.iters, "text_layout": a.text_layout,
           "weights_gib": weights_bytes / 2**30, "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
           "tokens": a.frames * a.height * a.width, "qwen_valid": a.qwen_valid, "byt5_valid": a.byt5_valid,
           "output_shape": list(out.shape), "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    print(json.dumps(res))
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
