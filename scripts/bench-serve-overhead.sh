#!/usr/bin/env bash
# What `dattn serve` adds to a generation: the same request once through `dattn generate` (its generation
# time: text encoding + denoising + decode + writing, from --report) and N times through POST
# /v1/videos/sync on one server (wall time per request, measured by the client, against the stages the
# server reports in X-Stage-Durations-Ms, writing included). The first request shows whether any model
# loading is left after start; the table goes to OUT/serve_overhead.md.
#
#   scripts/bench-serve-overhead.sh --model DIR [--bin build/dattn] [--device cuda] [--height 704] [--width 1280]
#                                   [--num-frames 49] [--steps 30] [--requests 3] [--video-format mp4|safetensors]
#                                   [--out DIR] [-- FLAGS...]
# --video-format: what both sides write (generate: OUT/generate.FMT; the server: serve --video-format FMT);
# mp4 (the default) needs an FFmpeg build, safetensors runs on any (the GPU machine's; 530 MB of float
# frames per request at the default size, so OUT wants a few GB free). FLAGS after -- go to both
# `dattn generate` and `dattn serve` (e.g. --dtype bf16, attention flags).
# CPU check: --model tests/golden/wan_tiny/pipeline --device cpu --height 32 --width 64 --num-frames 5 --steps 2.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(dirname "$here")/build/dattn" model="" device="cuda" height=704 width=1280 frames=49 steps=30 requests=3 format=mp4
out="${OUT:-/tmp/dattn-serve-bench}" extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --height) height="$2"; shift 2 ;;
    --width) width="$2"; shift 2 ;;
    --num-frames) frames="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --video-format) format="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "bench-serve-overhead.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$model" ] || { echo "bench-serve-overhead.sh: --model is required" >&2; exit 2; }
case "$format" in mp4|safetensors) ;; *) echo "bench-serve-overhead.sh: --video-format $format: expected mp4 or safetensors" >&2; exit 2 ;; esac
mkdir -p "$out" || exit 2
prompt="A cat walks on the grass, realistic"
"$bin" generate --model "$model" --prompt "$prompt" --height "$height" --width "$width" --num-frames "$frames" \
  --num-inference-steps "$steps" --seed 0 --device "$device" --output "$out/generate.$format" \
  --report "$out/generate.json" "${extra[@]}" >"$out/generate.log" 2>&1 || { cat "$out/generate.log"; exit 1; }
"$bin" serve "$model" --device "$device" --port 0 --output-dir "$out/jobs" --video-format "$format" "${extra[@]}" \
  2>"$out/serve.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null' EXIT
until grep -q '] ready:' "$out/serve.log"; do
  kill -0 "$pid" 2>/dev/null || { cat "$out/serve.log" >&2; exit 1; }
  sleep 0.2
done
port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$out/serve.log")
python3 - "$port" "$out" "$requests" "$prompt" "$height" "$width" "$frames" "$steps" "$format" <<'PY'
import json, sys, time, urllib.request
port, out, n, prompt, h, w, f, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], *map(int, sys.argv[5:9])
fmt = sys.argv[9]
gen = json.load(open(f"{out}/generate.json"))
gen_ms = sum(s["ms"] for s in gen["stages"] if not s["stage"].startswith("load"))
body = json.dumps({"prompt": prompt, "width": w, "height": h, "num_frames": f, "num_inference_steps": steps,
                   "seed": 0}).encode()
rows = []
for i in range(n):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/videos/sync", data=body,
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=3600) as r:
        data, stages = r.read(), json.loads(r.headers["X-Stage-Durations-Ms"])
    wall = (time.perf_counter() - t0) * 1e3
    loads = sum(v for k, v in stages.items() if k.startswith("load"))
    pipe = sum(v for k, v in stages.items() if not k.startswith("load"))
    rows.append((i + 1, wall, pipe, loads, len(data)))
lines = [f"# dattn serve overhead: {w}x{h}, {f} frames, {steps} steps, {n} sync requests on one server, {fmt}", "",
         f"`dattn generate` of the same request: generation {gen_ms:.1f} ms (text encoding + denoising + decode + writing).", "",
         "| request | wall ms (client) | pipeline stages ms (server) | loads ms | wall - stages ms | wall vs generate |",
         "|--:|--:|--:|--:|--:|--:|"]
for i, wall, pipe, loads, size in rows:
    lines.append(f"| {i} | {wall:.1f} | {pipe:.1f} | {loads:.1f} | {wall - pipe:.1f} ({100 * (wall - pipe) / wall:.2f}%) | {wall / gen_ms:.3f}x |")
lines += ["", f"The stages include writing the {fmt} on both sides (the server's report has it as the stage 'writing');",
          f"wall - stages = the queue, HTTP and the {fmt} read back and sent ({rows[-1][4] / 1e6:.1f} MB)."]
open(f"{out}/serve_overhead.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
status=$?
kill -TERM "$pid"; wait "$pid"; trap - EXIT
exit $status
