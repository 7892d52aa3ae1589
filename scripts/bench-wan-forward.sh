#!/usr/bin/env bash
# One full-size Wan transformer forward on the GPU: dattn (per attention backend) and the plain PyTorch
# baseline (bench/wan_forward_torch.py) in the same command, merged into one markdown table.
#
#   scripts/bench-wan-forward.sh --model DIR --config CONFIG.json [--backends FLASH_ATTN,TORCH_SDPA]
#                                [--bin build/bench/dattn_wan_forward_bench] [--out FILE.md]
# DIR is a checkpoint made with `dattn make-checkpoint --config CONFIG.json --out DIR --dtype bf16`.
# Raw outputs go to $OUT when set (the device tool's folder), else /tmp/dattn-wan-bench.
set -uo pipefail
model="" config="" backends="FLASH_ATTN" bin="build/bench/dattn_wan_forward_bench" out_md=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --backends) backends="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --out) out_md="$2"; shift 2 ;;
    *) echo "bench-wan-forward.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$model" ] && [ -n "$config" ] || { echo "bench-wan-forward.sh: --model and --config are required" >&2; exit 2; }
dir="${OUT:-/tmp/dattn-wan-bench}"
mkdir -p "$dir"
out_md="${out_md:-$dir/wan_forward_bench.md}"
status=0
python3 "$(dirname "$0")/../bench/wan_forward_torch.py" --config "$config" --json "$dir/torch.json" >"$dir/torch.log" 2>&1 || status=$?
IFS=, read -ra list <<<"$backends"
for b in "${list[@]}"; do
  "$bin" --model "$model" --backend "$b" --json "$dir/dattn-$b.json" >"$dir/dattn-$b.log" 2>&1 || status=$?
done
python3 - "$dir" "$out_md" "$config" "${list[@]}" <<'PY'
import json, os, subprocess, sys, datetime
d, out, config, backends = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def load(p):
    try: return json.load(open(p))
    except Exception: return None
t = load(os.path.join(d, "torch.json"))
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
lines = ["# Wan transformer forward, dattn vs plain PyTorch, same GPU, same run", "",
         f"- GPU: {gpu}", f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
         f"- config: `{config}`, bf16, random weights, scalar timestep, latent 48x13x44x80 (11440 tokens), 512 text tokens",
         f"- torch: {t['torch'] if t else 'failed (see torch.log)'}; eager, SDPA on cuDNN", "",
         "| engine | attention | median ms | attention ms | GEMM ms | rest ms | peak GiB | weights GiB | vs torch |",
         "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
if t:
    lines.append(f"| PyTorch eager | cuDNN SDPA | {t['median_ms']:.1f} | - | - | - | {t['peak_gib']:.2f} | {t['weights_gib']:.2f} | 1.00 |")
for b in backends:
    r = load(os.path.join(d, f"dattn-{b}.json"))
    if not r:
        lines.append(f"| dattn | {b} | failed (see dattn-{b}.log) | | | | | | |"); continue
    ratio = f"{r['median_ms'] / t['median_ms']:.2f}" if t else "-"
    lines.append(f"| dattn | {b} | {r['median_ms']:.1f} | {r['attention_ms']:.1f} | {r['gemm_ms']:.1f} | {r['rest_ms']:.1f} | {r['peak_gib']:.2f} | {r['weights_gib']:.2f} | {ratio} |")
lines += ["", "vs torch = dattn time / torch time (< 1: dattn faster)."]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
exit $status
