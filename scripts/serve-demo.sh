#!/usr/bin/env bash
# make serve-demo: `dattn serve` on the tiny golden Wan pipeline (CPU), requests served end to end through
# curl (health, models, a sync video, a queued one polled to completion), then SIGTERM and a clean exit.
set -euo pipefail
dattn=${1:-build/dattn}
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
section() { printf '\n== %s ==\n' "$1"; }

section "dattn serve tests/golden/wan_tiny/pipeline --device cpu --port 0"
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$dattn" serve tests/golden/wan_tiny/pipeline --device cpu --port 0 \
  --output-dir "$work/jobs" 2>"$work/log" &
pid=$!
until grep -q '] ready:' "$work/log"; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/log" >&2; exit 1; }
  sleep 0.1
done
cat "$work/log"
url=http://127.0.0.1:$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/log")

section "GET /health, GET /v1/models"
curl -sS "$url/health"; echo
curl -sS "$url/v1/models"; echo

section "POST /v1/videos/sync (multipart): the mp4 in the answer, stage durations in its headers"
curl -sS --fail-with-body -X POST "$url/v1/videos/sync" -F prompt="A red fox trotting through fresh snow" \
  -F size=64x32 -F num_frames=5 -F num_inference_steps=2 -o "$work/fox.mp4" -D - | grep -i '^x-'
echo "fox.mp4: $(wc -c <"$work/fox.mp4") bytes"

section "POST /v1/videos (JSON), polled until completed"
id=$(curl -sS "$url/v1/videos" -H 'Content-Type: application/json' \
  -d '{"prompt": "A lighthouse at night", "size": "64x32", "num_frames": 5, "num_inference_steps": 4}' |
  sed -n 's/.*"id":"\(video_[0-9a-f]*\)".*/\1/p')
echo "queued $id"
until curl -sS "$url/v1/videos/$id" | grep -q '"status":"completed"'; do sleep 0.1; done
curl -sS "$url/v1/videos/$id"; echo
curl -sS "$url/v1/videos/$id/content" -o "$work/lighthouse.mp4"
echo "lighthouse.mp4: $(wc -c <"$work/lighthouse.mp4") bytes"

section "SIGTERM"
kill -TERM "$pid"
wait "$pid"
pid=""
tail -2 "$work/log"
