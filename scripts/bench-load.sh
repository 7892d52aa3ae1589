#!/usr/bin/env bash
# Each component's CUDA load against the host-to-device bandwidth of the same run (issue 23: within
# 1.5x of bytes / bandwidth), for the full-size random Wan2.2-TI2V-5B and HunyuanVideo-1.5 pipelines
# (bf16), page-cache warm (each pipeline's files are read once with cat first).
#
#   scripts/bench-load.sh [--build DIR] [--family wan|hv15|both] [--rounds N] [--out DIR]
#
# --build DIR: a CUDA build with dattn and bench/dattn_load_bench (default build). The pipelines are
# written with `dattn make-pipeline` when missing, where scripts/bench-t2v.sh and bench-hv15-t2v.sh
# keep them (/tmp/dattn-wan2.2-ti2v-5b-random, /tmp/dattn-hv15-480p-random). --out: the tables and
# JSON (default $OUT, else /tmp/dattn-load-bench).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="$root/build" family=both rounds=2 out="${OUT:-/tmp/dattn-load-bench}"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --family) family="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench-load.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin="$build/dattn" bench="$build/bench/dattn_load_bench"
[ -x "$bin" ] && [ -x "$bench" ] || { echo "bench-load.sh: build $build first (dattn, dattn_load_bench)" >&2; exit 2; }
mkdir -p "$out" || exit 2
status=0

make_wan() {
  local cfg="$root/configs/wan2.2-ti2v-5b"
  "$bin" make-pipeline --out "$1" --transformer-config "$cfg/transformer.json" --vae-config "$cfg/vae.json" \
    --text-encoder-config "$cfg/text_encoder.json" --tokenizer "$cfg/tokenizer" \
    --scheduler-config "$cfg/scheduler_config.json" --dtype bf16 --text-encoder-dtype bf16
}
make_hv15() {
  local cfg="$root/configs/hunyuanvideo1.5-480p-t2v" tiny="$root/tests/golden/hv15_tiny/pipeline"
  "$bin" make-pipeline --out "$1" --transformer-config "$cfg/transformer.json" --vae-config "$cfg/vae.json" \
    --text-encoder-config "$cfg/text_encoder.json" --text-encoder-2-config "$cfg/text_encoder_2.json" \
    --tokenizer "$tiny/tokenizer" --tokenizer-2 "$tiny/tokenizer_2" --scheduler-config "$cfg/scheduler_config.json" \
    --guider-config "$cfg/guider_config.json" --dtype bf16
}
run() {  # NAME MODEL_DIR MAKER
  local name="$1" model="$2"
  if [ ! -f "$model/model_index.json" ]; then
    echo "== writing $model"
    "$3" "$model" >"$out/make_$name.log" 2>&1 || { cat "$out/make_$name.log"; rm -rf "$model"; status=1; return; }
  fi
  echo "== page cache: reading $model once"
  find "$model" -name '*.safetensors' -exec cat {} + >/dev/null
  echo "== $name"
  "$bench" --model "$model" --dtype bf16 --rounds "$rounds" --json "$out/load_$name.json" | tee "$out/load_$name.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
case "$family" in
  wan|both) run wan /tmp/dattn-wan2.2-ti2v-5b-random make_wan ;;&
  hv15|both) run hv15 /tmp/dattn-hv15-480p-random make_hv15 ;;
  wan) ;;
  *) echo "bench-load.sh: --family wan, hv15 or both" >&2; exit 2 ;;
esac
exit $status
