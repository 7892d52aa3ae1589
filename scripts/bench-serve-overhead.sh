#!/usr/bin/env bash
# What `dattn serve` adds to a generation: the same request once through `dattn generate` (its generation
# time: text encoding + denoising + decode + writing, from --report) and N times through POST
# /v1/videos/sync on one server (wall time per request, measured by the client, against the stages the
# server reports in X-Stage-Durations-Ms, writing included). The first request shows whether any model
# loading is left after start. Then, on the same server, N queued jobs of the same request, one after
# another (each submitted after the previous one's download, so none waits behind another): POST
# /v1/videos, GET /v1/videos/{id} every 50 ms until completed (wall time from the POST to the poll that
# saw it completed, against the job's report.stage_ms), then GET /v1/videos/{id}/content timed apart:
# the overhead without moving the body (a safetensors answer is 530 MB at the default size), up to one
# poll interval plus one poll's round trip late. The tables go to OUT/serve_overhead.md.
#
#   scripts/bench-serve-overhead.sh --model DIR [--bin build/dattn] [--device cuda] [--height 704] [--width 1280]
#                                   [--num-frames 49] [--steps 30] [--requests 3] [--video-format mp4|safetensors]
#                                   [--out DIR] [-- FLAGS...]
# --video-format: what both sides write (generate: OUT/generate.FMT; the server: serve --video-format FMT);
# mp4 (the default) needs an FFmpeg build, safetensors runs on any (the GPU machine's; 530 MB of float
# frames per request at the default size, so OUT wants a few GB free: the sync jobs' files stay, each
# queued job is deleted after its download). FLAGS after -- go to both `dattn generate` and `dattn serve`
# (e.g. --dtype bf16, attention flags).
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
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
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
: >"$out/serve.log"  # before the server starts: the wait below must not read a previous run's log
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
base = f"http://127.0.0.1:{port}"
poll_s = 0.050
gen = json.load(open(f"{out}/generate.json"))
gen_ms = sum(s["ms"] for s in gen["stages"] if not s["stage"].startswith("load"))
body = json.dumps({"prompt": prompt, "width": w, "height": h, "num_frames": f, "num_inference_steps": steps,
                   "seed": 0}).encode()

def split(stages):  # (pipeline stages ms, loads ms)
    return (sum(v for k, v in stages.items() if not k.startswith("load")),
            sum(v for k, v in stages.items() if k.startswith("load")))

def call(method, path, data=None):
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data is not None else {})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return r.read()

rows = []
for i in range(n):
    req = urllib.request.Request(f"{base}/v1/videos/sync", data=body, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=3600) as r:
        data, stages = r.read(), json.loads(r.headers["X-Stage-Durations-Ms"])
    wall = (time.perf_counter() - t0) * 1e3
    pipe, loads = split(stages)
    rows.append((i + 1, wall, pipe, loads, len(data)))

# Queued jobs, one at a time: wall from the POST to the poll that saw completed; the job completed after the
# last poll that did not see it was sent, so the true wall lies in (last - t0, done - t0].
queued = []
for i in range(n):
    t0 = time.perf_counter()
    vid = json.loads(call("POST", "/v1/videos", body))["id"]
    last = t0
    while True:
        sent = time.perf_counter()
        job = json.loads(call("GET", f"/v1/videos/{vid}"))
        if job["status"] == "completed":
            done = time.perf_counter()
            break
        if job["status"] in ("failed", "cancelled"):
            sys.exit(f"bench-serve-overhead.sh: queued job {i + 1} ({vid}) {job['status']}: "
                     f"{job.get('error', {}).get('message', '?')}")
        last = sent
        time.sleep(poll_s)
    stages = (job.get("report") or {}).get("stage_ms")
    if not stages:
        sys.exit(f"bench-serve-overhead.sh: completed job {vid} has no report.stage_ms: {json.dumps(job)}")
    pipe, loads = split(stages)
    d0 = time.perf_counter()
    data = call("GET", f"/v1/videos/{vid}/content")
    dl = (time.perf_counter() - d0) * 1e3
    call("DELETE", f"/v1/videos/{vid}")  # its file goes (530 MB as safetensors at the default size)
    queued.append((i + 1, (done - t0) * 1e3, (last - t0) * 1e3, pipe, loads, dl, len(data)))

lines = [f"# dattn serve overhead: {w}x{h}, {f} frames, {steps} steps, {n} sync requests then {n} queued jobs "
         f"on one server, {fmt}", "",
         f"`dattn generate` of the same request: generation {gen_ms:.1f} ms (text encoding + denoising + decode + writing).", "",
         "| request | wall ms (client) | pipeline stages ms (server) | loads ms | wall - stages ms | wall vs generate |",
         "|--:|--:|--:|--:|--:|--:|"]
for i, wall, pipe, loads, size in rows:
    lines.append(f"| {i} | {wall:.1f} | {pipe:.1f} | {loads:.1f} | {wall - pipe:.1f} ({100 * (wall - pipe) / wall:.2f}%) | {wall / gen_ms:.3f}x |")
lines += ["", f"The stages include writing the {fmt} on both sides (the server's report has it as the stage 'writing');",
          f"wall - stages = the queue, HTTP and the {fmt} read back and sent ({rows[-1][4] / 1e6:.3f} MB).", "",
          f"Queued jobs, one at a time after the sync requests: POST /v1/videos, GET /v1/videos/{{id}} every "
          f"{poll_s * 1e3:.0f} ms until completed,",
          "stages from the job's report.stage_ms, then GET /v1/videos/{id}/content timed apart "
          "(the download is not in the wall);",
          "the % is of the job's stages (its generation).", "",
          "| job | queued: wall to completed ms | stages ms | loads ms | wall - stages ms (%) | download ms (MB/s) |",
          "|--:|--:|--:|--:|--:|--:|"]
for i, wall, low, pipe, loads, dl, size in queued:
    mbps = size / 1e6 / (dl / 1e3) if dl > 0 else float("inf")
    lines.append(f"| {i} | {wall:.1f} | {pipe:.1f} | {loads:.1f} | {wall - pipe:.1f} "
                 f"({100 * (wall - pipe) / pipe:.2f}%) "
                 f"| {dl:.1f} ({mbps:.1f} MB/s) |")
# The generation: each job's own stages (the same run as its wall); dattn generate's is a separate process.
over = [(wall - pipe, 100 * (wall - pipe) / pipe, 100 * (wall - pipe) / gen_ms) for _, wall, _, pipe, _, _, _ in queued]
bounds = [(max(0.0, lo - pipe), wall - pipe) for _, wall, lo, pipe, _, _, _ in queued]
lines += ["", f"HTTP + queue overhead without the body, (wall to completed - stages) / generation: "
          f"{min(o[1] for o in over):.2f}-{max(o[1] for o in over):.2f}% of the job's own stages "
          f"({min(o[0] for o in over):.1f}-{max(o[0] for o in over):.1f} ms, jobs 1-{n}; "
          f"{min(o[2] for o in over):.2f}-{max(o[2] for o in over):.2f}% of `dattn generate`'s {gen_ms:.1f} ms).",
          f"Resolution: the poll that saw completed is up to {poll_s * 1e3:.0f} ms + one poll's round trip late "
          f"({100 * poll_s * 1e3 / (sum(q[3] for q in queued) / n):.2f}% of these jobs' mean stages), so these are "
          "upper bounds; the job completed after the last poll that did not see it was sent, so per job "
          "wall - stages lies in "
          + ", ".join(f"{i + 1}: [{lo:.1f}, {hi:.1f}] ms" for i, (lo, hi) in enumerate(bounds)) + ".",
          f"The download is {queued[-1][6] / 1e6:.3f} MB of {fmt}."]
open(f"{out}/serve_overhead.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
status=$?
kill -TERM "$pid"; wait "$pid"; trap - EXIT
exit $status
