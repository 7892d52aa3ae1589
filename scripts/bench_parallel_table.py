#!/usr/bin/env python3
"""The runs of scripts/bench-parallel.sh as one markdown table: per mode its ranks, end-to-end and denoising
time, the denoising speed-up against the run named "one", the median step, the collectives' time in the
denoising ops (`--op-times`' "communication") and its share of them, rank 0's peak device memory, and the
video's difference from the "one" run (rel L2, max abs; needs numpy, else left out).

    python3 scripts/bench_parallel_table.py OUT_DIR VIDEO_DIR

OUT_DIR holds modes.txt ("MODE RC" per run) and MODE.json (`dattn generate --report`); VIDEO_DIR holds
MODE.safetensors (the float frames, tensor "video").
"""
import json
import os
import struct
import sys


def stage_ms(report, name):
    return next((s["ms"] for s in report.get("stages", []) if s["stage"] == name), None)


def video(path):
    try:
        import numpy as np
    except ImportError:
        return None
    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            t = header["video"]
            if t["dtype"] != "F32":
                return None
            begin, end = t["data_offsets"]
            f.seek(8 + n + begin)
            return np.frombuffer(f.read(end - begin), dtype=np.float32).astype(np.float64)
    except (OSError, KeyError, ValueError):
        return None


def main():
    out, videos = sys.argv[1], sys.argv[2]
    runs = []
    with open(os.path.join(out, "modes.txt")) as f:
        for line in f:
            mode, rc = line.split()
            report = None
            if rc == "0":
                with open(os.path.join(out, mode + ".json")) as r:
                    report = json.load(r)
            runs.append((mode, report))
    one = next((r for m, r in runs if m == "one" and r), None)
    one_video = video(os.path.join(videos, "one.safetensors")) if one else None
    print("| mode | ranks | transport | total s | denoising s | speed-up (denoising) | median step ms | "
          "communication ms (share of denoising ops) | peak device GiB (rank 0) | video vs one: rel L2, max abs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode, r in runs:
        if not r:
            print(f"| {mode} | failed (see {mode}.log) |||||||||")
            continue
        p = r.get("parallel", {})
        den = stage_ms(r, "denoising")
        speed = f"{stage_ms(one, 'denoising') / den:.2f}x" if one and den else "-"
        ops = r.get("op_ms", {}).get("denoising", {})
        comm = ops.get("communication")
        comm_text = f"{comm:.0f} ({100 * comm / sum(ops.values()):.1f}%)" if comm is not None and ops else "-"
        peak = r.get("peak_device_bytes")
        peak_text = f"{peak / 2**30:.1f}" if peak else "-"
        diff = "-"
        v = video(os.path.join(videos, mode + ".safetensors")) if one_video is not None else None
        if v is not None and v.shape == one_video.shape:
            import numpy as np
            d = v - one_video
            diff = f"{np.linalg.norm(d) / np.linalg.norm(one_video):.2e}, {np.abs(d).max():.2e}"
        print(f"| {mode} | {p.get('ranks', 1)} | {p.get('transport', '-')} | {r['total_ms'] / 1000:.2f} | "
              f"{den / 1000:.2f} | {speed} | {r.get('median_step_ms', 0):.1f} | {comm_text} | {peak_text} | {diff} |")


if __name__ == "__main__":
    main()
