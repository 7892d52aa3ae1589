#!/usr/bin/env bash
# One full-size transformer forward on the GPU: dattn (per attention backend) and the plain PyTorch
# baseline (bench/<family>_forward_torch.py) in the same command, merged into one markdown table.
#
#   scripts/bench-forward.sh --family wan|hv15 --model DIR --config CONFIG.json
#                            [--backends FLASH_ATTN,TORCH_SDPA,FLASH_ATTN+fp8] [--bin BIN] [--out FILE.md]
# A backend entry BACKEND+Q also passes --quantization Q (fp8 linears); a trailing :VAR=VALUE sets an
# environment variable for that run only (e.g. SAGE_ATTN:DATTN_SOME_SWITCH=on to A/B a switch).
# DIR is a checkpoint made with `dattn make-checkpoint --config CONFIG.json --out DIR --dtype bf16`.
# hv15 runs the PyTorch baseline twice: with diffusers' text layout (1985 packed text tokens, boolean
# mask) and trimmed to the valid tokens (the work dattn does, no mask).
# Raw outputs go to $OUT when set (the device tool's folder), else /tmp/dattn-forward-bench.
set -uo pipefail
family="wan" model="" config="" backends="FLASH_ATTN" bin="" out_md=""
while [ $# -gt 0 ]; do
  case "$1" in
    --family) family="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --backends) backends="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --out) out_md="$2"; shift 2 ;;
    *) echo "bench-forward.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$family" in wan|hv15) ;; *) echo "bench-forward.sh: --family must be wan or hv15, got '$family'" >&2; exit 2 ;; esac
[ -n "$model" ] && [ -n "$config" ] || { echo "bench-forward.sh: --model and --config are required" >&2; exit 2; }
bin="${bin:-build/bench/dattn_${family}_forward_bench}"
dir="${OUT:-/tmp/dattn-forward-bench}"
mkdir -p "$dir"
out_md="${out_md:-$dir/${family}_forward_bench.md}"
status=0
torch_py="$(dirname "$0")/../bench/${family}_forward_torch.py"
if [ "$family" = hv15 ]; then
  for layout in diffusers trimmed; do
    python3 "$torch_py" --config "$config" --text-layout "$layout" --json "$dir/torch-$layout.json" \
      >"$dir/torch-$layout.log" 2>&1 || status=$?
  done
else
  python3 "$torch_py" --config "$config" --json "$dir/torch.json" >"$dir/torch.log" 2>&1 || status=$?
fi
IFS=, read -ra list <<<"$backends"
for entry in "${list[@]}"; do  # BACKEND[+QUANTIZATION][:VAR=VALUE] (e.g. FLASH_ATTN+fp8)
  spec="${entry%%:*}" env_kv=()
  [[ "$entry" == *:* ]] && env_kv=("${entry#*:}")
  b="${spec%%+*}" q=none
  [[ "$spec" == *+* ]] && q="${spec#*+}"
  env "${env_kv[@]}" "$bin" --model "$model" --backend "$b" --quantization "$q" --json "$dir/dattn-$entry.json" >"$dir/dattn-$entry.log" 2>&1 || status=$?
done
python3 - "$family" "$dir" "$out_md" "$config" "${list[@]}" <<'PY'
import json, os, subprocess, sys, datetime
family, d, out, config, backends = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def load(p):
    try: return json.load(open(p))
    except Exception: return None
if family == "hv15":
    torch_rows = [("PyTorch eager, diffusers text layout", "SDPA, boolean mask", load(os.path.join(d, "torch-diffusers.json"))),
                  ("PyTorch eager, valid text only", "cuDNN SDPA", load(os.path.join(d, "torch-trimmed.json")))]
    title = "HunyuanVideo-1.5 transformer forward"
    shape = "latent 65x9x30x52 (14040 video tokens; 480x832, 33 frames), 128 of 1000 Qwen + 16 of 256 ByT5 tokens valid"
else:
    torch_rows = [("PyTorch eager", "cuDNN SDPA", load(os.path.join(d, "torch.json")))]
    title = "Wan transformer forward"
    shape = "scalar timestep, latent 48x13x44x80 (11440 tokens), 512 text tokens"
t = torch_rows[0][2]
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
lines = [f"# {title}, dattn vs plain PyTorch, same GPU, same run", "",
         f"- GPU: {gpu}", f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
         f"- config: `{config}`, bf16, random weights, {shape}",
         f"- torch: {t['torch'] if t else 'failed (see torch*.log)'}; eager", "",
         "| engine | attention | median ms | attention ms | GEMM ms | rest ms | peak GiB | weights GiB | vs torch |",
         "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
for name, attn, r in torch_rows:
    if r:
        ratio = f"{r['median_ms'] / t['median_ms']:.2f}" if t else "-"
        lines.append(f"| {name} | {attn} | {r['median_ms']:.1f} | - | - | - | {r['peak_gib']:.2f} | {r['weights_gib']:.2f} | {ratio} |")
    else:
        lines.append(f"| {name} | {attn} | failed (see the torch log) | | | | | | |")
for b in backends:
    r = load(os.path.join(d, f"dattn-{b}.json"))
    if not r:
        lines.append(f"| dattn | {b} | failed (see dattn-{b}.log) | | | | | | |"); continue
    ratio = f"{r['median_ms'] / t['median_ms']:.2f}" if t else "-"
    label = b.replace("+", ", linears ").replace(":", ", ")
    lines.append(f"| dattn | {label} | {r['median_ms']:.1f} | {r['attention_ms']:.1f} | {r['gemm_ms']:.1f} | {r['rest_ms']:.1f} | {r['peak_gib']:.2f} | {r['weights_gib']:.2f} | {ratio} |")
lines += ["", f"vs torch = time / the first PyTorch row's time (< 1: faster)."]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
exit $status
