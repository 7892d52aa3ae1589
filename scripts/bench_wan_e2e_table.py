#!/usr/bin/env python3
"""The runs of scripts/bench-wan-e2e.sh as one markdown table: each run's stages, total and median step
(from its `dattn generate --report` JSON), its loads that ran beside other stages, and the SM clock and
board power nvidia-smi sampled while it ran.

    python3 scripts/bench_wan_e2e_table.py OUT_DIR

OUT_DIR holds runs.txt ("NAME START END" per run, Unix seconds), NAME/report.json per run and smi.csv
(timestamp, SM MHz, W, throttle reasons). Standard library only.
"""
import datetime
import json
import os
import sys

STAGES = ["start-up", "load text encoder", "text encoding", "load transformer", "denoising", "load vae", "vae decode", "writing"]


def smi_samples(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) < 4:
                    continue
                try:
                    t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
                    out.append((t.timestamp(), float(parts[1]), float(parts[2]), int(parts[3], 16)))
                except ValueError:
                    continue
    except OSError:
        pass
    return out


def main():
    d = sys.argv[1]
    runs = []
    with open(os.path.join(d, "runs.txt")) as f:
        for line in f:
            name, start, end = line.split()
            runs.append((name, float(start), float(end)))
    samples = smi_samples(os.path.join(d, "smi.csv"))
    head = ["run", "total"] + STAGES + ["median step", "loaded ahead (own ms)", "SM MHz mean / min", "W mean", "power-capped"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "--:|" * (len(head) - 2) + "---|"]
    for name, start, end in runs:
        try:
            r = json.load(open(os.path.join(d, name, "report.json")))
        except (OSError, ValueError):
            lines.append(f"| {name} | failed (see {name}.log) |" + " |" * (len(head) - 2))
            continue
        stages = {s["stage"]: s["ms"] for s in r.get("stages", [])}
        cells = [name, f"{r['total_ms']:.0f}"] + [f"{stages[s]:.0f}" if s in stages else "-" for s in STAGES]
        cells.append(f"{r.get('median_step_ms', 0):.1f}")
        ahead = ", ".join(f"{a['stage'][5:]} {a['ms']:.0f}" for a in r.get("loaded_ahead", []))
        cells.append(ahead or "-")
        inside = [s for s in samples if start <= s[0] <= end]
        if inside:
            mhz = [s[1] for s in inside]
            watts = [s[2] for s in inside]
            capped = sum(1 for s in inside if s[3] & 0x4) / len(inside)  # 0x4: software power cap
            cells += [f"{sum(mhz) / len(mhz):.0f} / {min(mhz):.0f}", f"{sum(watts) / len(watts):.0f}", f"{100 * capped:.0f}% of samples"]
        else:
            cells += ["-", "-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Milliseconds; each run a cold `dattn generate` process. A load that ran ahead shows in its stage row",
              "as the time the next stage waited for it; its own duration is in 'loaded ahead'. Clock and power: nvidia-smi",
              "samples every 200 ms over the whole process (loads, text, denoising, decode, writing)."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
