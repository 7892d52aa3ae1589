#!/usr/bin/env python3
"""The `dattn generate --report` JSON as a markdown table: time per stage and peak memory.

    python3 scripts/bench_t2v_table.py REPORT.json [--out FILE.md] [--gpu "NAME, DRIVER, MEMORY"]
                                       [--gpu-memory SAMPLES.csv] [--make-pipeline-s SECONDS]

--gpu-memory: nvidia-smi memory.used samples in MiB, one per line (the driver's view, CUDA context
included); its maximum is shown next to the report's own device peak (dattn's tensors only).
Standard library only.
"""
import argparse
import datetime
import json
import sys

GIB = 1024.0 ** 3

# Which stage group (the report's stage_memory entries) each timed stage belongs to.
GROUP = {
    "load text encoder": "text encoder",
    "text encoding": "text encoder",
    "load transformer": "denoising",
    "denoising": "denoising",
    "load vae": "vae decode",
    "vae decode": "vae decode",
}


def gib(value):
    return "-" if value is None or value < 0 else f"{value / GIB:.2f}"


def max_sample_mib(path):
    best = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            try:
                v = float(line)
            except ValueError:
                continue
            best = v if best is None else max(best, v)
    return best


def table(report, gpu=None, gpu_memory_mib=None, make_pipeline_s=None):
    steps = report.get("num_inference_steps") or 0
    guidance = report.get("guidance_scale") or 0
    stages = report.get("stages", [])
    memory = {m["stage"]: m for m in report.get("stage_memory", [])}
    lines = [
        "# dattn generate: Wan2.2-TI2V-5B, random weights",
        "",
        f"- video: {report.get('width')}x{report.get('height')}, {report.get('frames')} frames, "
        f"{steps} steps, guidance {guidance:g}, seed {report.get('seed')}, "
        f"{report.get('device')} {report.get('dtype')}",
    ]
    if gpu:
        lines.append(f"- GPU: {gpu}")
    lines.append(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    for a in report.get("attention", []):
        lines.append(f"- attention role `{a.get('role')}`: {a.get('backend')} ({a.get('source')})")
    if make_pipeline_s is not None:
        lines.append(f"- writing the random pipeline (`dattn make-pipeline`): {make_pipeline_s:.1f} s")
    lines += ["", "| stage | ms | share | peak host GiB | peak device GiB |", "|---|--:|--:|--:|--:|"]
    total = report.get("total_ms") or sum(s["ms"] for s in stages) or 1.0
    shown = set()
    for s in stages:
        name, ms = s["stage"], s["ms"]
        group = GROUP.get(name)
        # A group's memory is shown once, on its last stage (loading and running share one peak).
        last_of_group = group is not None and not any(GROUP.get(t["stage"]) == group for t in stages[stages.index(s) + 1:])
        m = memory.get(group) if last_of_group and group not in shown else None
        if m:
            shown.add(group)
        host = gib(m.get("peak_host_bytes")) if m else ""
        dev = gib(m.get("peak_device_bytes")) if m else ""
        lines.append(f"| {name} | {ms:.1f} | {100.0 * ms / total:.1f}% | {host} | {dev} |")
    lines.append(f"| **total** | **{total:.1f}** | 100% | {gib(report.get('peak_host_rss_bytes'))} | "
                 f"{gib(report.get('peak_device_bytes'))} |")
    lines.append("")
    denoise = next((s["ms"] for s in stages if s["stage"] == "denoising"), None)
    if denoise is not None and steps:
        per_step = denoise / steps
        forwards = 2 if guidance > 1 else 1
        lines.append(f"Denoising: {per_step:.1f} ms per step, {per_step / forwards:.1f} ms per transformer forward "
                     f"({forwards} forward{'s' if forwards > 1 else ''} per step with guidance {guidance:g}, "
                     "plus the scheduler step and host transfers).")
    lines.append("Peak memory is per stage group (loading and running a component): host = VmHWM, reset "
                 "between groups; device = the most memory dattn's tensors held at once.")
    if gpu_memory_mib is not None:
        lines.append(f"Device memory used as nvidia-smi saw it (CUDA context, memory pool, cuBLASLt workspaces "
                     f"included; 100 ms samples): peak {gpu_memory_mib / 1024.0:.2f} GiB.")
    return "\n".join(lines) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report")
    p.add_argument("--out")
    p.add_argument("--gpu")
    p.add_argument("--gpu-memory")
    p.add_argument("--make-pipeline-s", type=float)
    a = p.parse_args(argv)
    with open(a.report) as f:
        report = json.load(f)
    samples = max_sample_mib(a.gpu_memory) if a.gpu_memory else None
    text = table(report, a.gpu, samples, a.make_pipeline_s)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
