#!/usr/bin/env bash
# dattn's attention benchmark and PyTorch's SDPA benchmark in one command on the GPU machine, merged
# into one markdown table (dattn's TFLOP/s as ratios to torch cuDNN and torch flash of the same run).
#
#   scripts/bench-attention.sh [options] [-- dattn_attention_bench options]
#
#   --bin PATH           dattn benchmark binary (default build/bench/dattn_attention_bench)
#   --torch-script PATH  copy of ../shared/anchors/torch_sdpa_bench.py (default .bench-anchors/torch_sdpa_bench.py)
#   --out FILE           the markdown table (default OUTDIR/attention_bench.md); also printed on stdout
#   --out-dir DIR        raw outputs: dattn.json, dattn.log, torch.log, sdpa_anchors.json
#                        (default $OUT when set, as on the GPU machine, else /tmp/dattn-bench-<date>)
#   --no-torch           skip the torch script (no ratios)
# Options after -- (or any option not listed above) go to the dattn benchmark, e.g. --check,
# --shapes flux_joint,hd64, --backends FLASH_ATTN; --device cuda is added unless given.
# Exit status: 0 when both benchmarks and the merge succeeded, else the first failure's status (the
# table is written whenever anything was measured).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Shell-quoted only where needed, so the command in the table header reads as typed.
quote() { if [[ "$1" =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then printf '%s' "$1"; else printf '%q' "$1"; fi; }
invocation="scripts/bench-attention.sh"
for a in "$@"; do invocation+=" $(quote "$a")"; done

bin="build/bench/dattn_attention_bench"
torch_script=".bench-anchors/torch_sdpa_bench.py"
out_md=""
out_dir="${OUT:-/tmp/dattn-bench-$(date -u +%Y%m%d-%H%M%S)}"
run_torch=1
dattn_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --torch-script) torch_script="$2"; shift 2 ;;
    --out) out_md="$2"; shift 2 ;;
    --out-dir) out_dir="$2"; shift 2 ;;
    --no-torch) run_torch=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --) shift; dattn_args+=("$@"); break ;;
    *) dattn_args+=("$1"); shift ;;
  esac
done
case " ${dattn_args[*]-} " in *" --device "*|*" --device="*) ;; *) dattn_args=(--device cuda "${dattn_args[@]}") ;; esac

mkdir -p "$out_dir" || { echo "bench-attention: cannot create $out_dir" >&2; exit 2; }
out_dir="$(cd "$out_dir" && pwd)"
[ -n "$out_md" ] || out_md="$out_dir/attention_bench.md"

gpu="unknown (no nvidia-smi)"; driver="unknown"
if command -v nvidia-smi >/dev/null 2>&1; then
  q="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  if [ -n "$q" ]; then gpu="${q%,*}"; driver="${q##*, }"; fi
  n="$(nvidia-smi -L 2>/dev/null | wc -l)"
  [ "${n:-0}" -gt 1 ] && gpu="$gpu (x$n visible; dattn and torch use device 0)"
fi
when="$(date -u '+%Y-%m-%d %H:%M UTC')"

status=0
notes=()

# 1. dattn
if [ ! -x "$bin" ]; then
  echo "bench-attention: $bin not found or not executable; build it with" >&2
  echo "  cmake -S . -B build -G Ninja -DDATTN_CUDA=on && ninja -C build dattn_attention_bench" >&2
  notes+=("dattn benchmark not run: $bin missing")
  status=2
else
  dattn_cmd=("$bin" "${dattn_args[@]}" --json "$out_dir/dattn.json")
  echo "== $(for a in "${dattn_cmd[@]}"; do printf '%s ' "$(quote "$a")"; done)" >&2
  rm -f "$out_dir/dattn.json"
  "${dattn_cmd[@]}" 2>&1 | tee "$out_dir/dattn.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    why="$(grep -m1 -i 'error' "$out_dir/dattn.log" || tail -n 1 "$out_dir/dattn.log")"
    notes+=("dattn benchmark exited with status $rc: $why")
    status=$rc
  fi
fi

# 2. torch (writes $OUT/sdpa_anchors.json; OUT is pointed at out_dir for it)
if [ "$run_torch" -eq 1 ]; then
  if [ ! -f "$torch_script" ]; then
    echo "bench-attention: $torch_script not found; copy it first:" >&2
    echo "  mkdir -p .bench-anchors && cp ../shared/anchors/torch_sdpa_bench.py .bench-anchors/" >&2
    notes+=("torch benchmark not run: $torch_script missing")
    [ "$status" -ne 0 ] || status=2
  else
    echo "== OUT=$out_dir python3 $torch_script" >&2
    rm -f "$out_dir/sdpa_anchors.json" "$out_dir/torch.log"
    OUT="$out_dir" python3 "$torch_script" 2>&1 | tee "$out_dir/torch.log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
      notes+=("torch benchmark exited with status $rc: $(tail -n 1 "$out_dir/torch.log")")
      [ "$status" -ne 0 ] || status=$rc
    fi
  fi
else
  notes+=("torch benchmark skipped (--no-torch)")
fi

# 3. the merged table
merge_args=()
for n in "${notes[@]+"${notes[@]}"}"; do merge_args+=(--note "$n"); done
[ -f "$out_dir/dattn.json" ] && merge_args+=(--dattn "$out_dir/dattn.json")
[ -f "$out_dir/sdpa_anchors.json" ] && merge_args+=(--torch "$out_dir/sdpa_anchors.json")
[ -f "$out_dir/torch.log" ] && merge_args+=(--torch-log "$out_dir/torch.log")
echo "== merged table: $out_md" >&2
echo
python3 "$root/scripts/bench_table.py" --gpu "$gpu" --driver "$driver" --date "$when" --command "$invocation" \
  --out "$out_md" "${merge_args[@]+"${merge_args[@]}"}"
rc=$?
[ "$rc" -eq 0 ] || [ "$status" -ne 0 ] || status=$rc
exit "$status"
