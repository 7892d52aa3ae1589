#!/usr/bin/env python3
"""Matrix and attention rates held for seconds, not bursts: the ceilings a whole forward runs under.

A short benchmark measures a cool GPU at its boost clock; a 30-block forward or a 60-forward denoising
stage runs long enough for the board's power limit to lower the clock. This script runs one operation
back to back for --seconds and prints its rate per window of --window seconds, so the first window (the
burst figure) and the last ones (the held figure) can be compared; run nvidia-smi beside it for clocks.

  python3 bench/sustained_ceiling.py [--seconds 8] [--window 1] [--json FILE]

Operations (bf16, torch on the GPU): the Wan2.2-5B forward's largest GEMM (11440 tokens x 3072 -> 14336,
the FFN's first linear) and its self-attention (1 x 24 heads x 11440 tokens x 128, cuDNN SDPA).
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


def held_rate(fn, flops, seconds, window):
    """Runs fn back to back; returns the TFLOP/s of each window (CUDA events, synchronised per window)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    rates = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        n = 0
        begin.record()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < window:
            fn()
            n += 1
            if n % 16 == 0:
                torch.cuda.synchronize()  # keep the host from queueing far ahead of the window
        end.record()
        end.synchronize()
        rates.append(flops * n / (begin.elapsed_time(end) / 1e3) / 1e12)
    return rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    dev = torch.device("cuda")
    x = torch.randn(11440, 3072, device=dev, dtype=torch.bfloat16)
    w = torch.randn(14336, 3072, device=dev, dtype=torch.bfloat16) / 55.0
    q, k, v = (torch.randn(1, 24, 11440, 128, device=dev, dtype=torch.bfloat16) for _ in range(3))
    gemm_flops = 2.0 * 11440 * 3072 * 14336
    attn_flops = 4.0 * 24 * 11440 * 11440 * 128

    def gemm():
        return x @ w.t()

    def attention():
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v)

    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "window_s": a.window}
    for name, fn, flops in [("gemm_11440x3072x14336", gemm, gemm_flops), ("sdpa_cudnn_wan22_self", attention, attn_flops)]:
        rates = held_rate(fn, flops, a.seconds, a.window)
        out[name] = rates
        print(f"{name}: first window {rates[0]:.1f} TFLOP/s, last {rates[-1]:.1f}, "
              f"min {min(rates):.1f}, max {max(rates):.1f} ({len(rates)} windows)", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
