#!/usr/bin/env python3
"""The table of scripts/bench-pipeline-step.sh: end to end and per step for each run, against the
forward benchmark measured in the same command.

    python3 scripts/bench_pipeline_step_table.py DIR [--out FILE.md]

DIR holds new-batched/report.json, new-sequential/report.json, old/report.json (optional) and
forward-b1.json, forward-b2.json. Standard library only.
"""
import argparse
import datetime
import json
import os
import subprocess


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def stage(report, name):
    for s in report.get("stages", []):
        if s["stage"] == name:
            return s["ms"]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--out")
    a = ap.parse_args()
    d = a.dir
    f1, f2 = load(os.path.join(d, "forward-b1.json")), load(os.path.join(d, "forward-b2.json"))
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() or "unknown"
    lines = ["# Pipeline step vs transformer forward, and end to end, same GPU, same command", "",
             f"- GPU: {gpu}", f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
             "- Wan2.2-TI2V-5B, random bf16 weights, 704x1280, 49 frames, 30 steps, guidance 5, FLASH_ATTN;"
             " files in the page cache (written by make-pipeline in the same command, or read by an earlier run)",
             "- forward: scripts' dattn_wan_forward_bench, per-token timesteps as the pipeline passes them, median of 7",
             ""]
    if f1 and f2:
        lines.append(f"forward: batch 1 {f1['median_ms']:.1f} ms (x2 = {2 * f1['median_ms']:.1f}), "
                     f"batch 2 {f2['median_ms']:.1f} ms")
        lines.append("")
    lines += ["| run | guidance | end to end s | denoising s | median step ms | reference ms | step / reference |",
              "|---|---|--:|--:|--:|--:|--:|"]
    for name, label in (("new-batched", "this tree"), ("new-sequential", "this tree"), ("old", "previous main")):
        r = load(os.path.join(d, name, "report.json"))
        if not r:
            if name != "old":
                lines.append(f"| {label} | {name} | failed (see {name}.log) | | | | |")
            continue
        g = r.get("guidance", "sequential (two forwards)")
        step = r.get("median_step_ms")
        if step is None:  # older reports: the denoising stage over the steps
            step = stage(r, "denoising") / r["num_inference_steps"]
        ref = None
        if f1 and f2:
            ref = f2["median_ms"] if g == "batched" else 2 * f1["median_ms"]
        ratio = f"{step / ref:.3f}" if ref else "-"
        lines.append(f"| {label} | {g} | {r['total_ms'] / 1000:.1f} | {stage(r, 'denoising') / 1000:.1f} | "
                     f"{step:.1f} | {ref:.1f} | {ratio} |" if ref else
                     f"| {label} | {g} | {r['total_ms'] / 1000:.1f} | {stage(r, 'denoising') / 1000:.1f} | {step:.1f} | - | - |")
    lines += ["", "reference = one batch-2 forward for batched guidance, two batch-1 forwards for sequential.",
              "The previous main's step is its denoising stage over the steps (its report has no per-step median)."]
    for name in ("new-batched", "new-sequential", "old"):
        r = load(os.path.join(d, name, "report.json"))
        if r:
            lines.append("")
            lines.append(f"{name} stages: " + ", ".join(f"{s['stage']} {s['ms'] / 1000:.2f} s" for s in r["stages"]))
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
