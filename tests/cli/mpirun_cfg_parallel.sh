#!/usr/bin/env bash
# ctest parallel_cfg_generate_mpirun: `dattn generate --cfg-parallel-size 2` under `mpirun -np 2` on the
# tiny golden Wan and HunyuanVideo-1.5 pipelines writes the same bytes as one process with sequential
# guidance. The bound is exact equality (cmp of the .safetensors frames): each rank runs the same
# batch-1 forward as the sequential strategy on the same inputs, and the gathered predictions are
# combined by the same guidance_combine, so nothing may differ by even one rounding.
# Also: rank 1 writes nothing, rank 0 logs each attention role once, and a request without guidance is
# refused on every rank before any work.
# Usage: mpirun_cfg_parallel.sh MPIRUN DATTN GOLDEN_DIR WORK_DIR
set -euo pipefail
mpirun=$1 dattn=$2 golden=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
# 2 ranks on the 2-core machine: no binding, so each rank's OpenMP threads may use both cores.
launch() { "$mpirun" --oversubscribe --bind-to none -np 2 "$@"; }

wan=(generate --device cpu --model "$golden/wan_tiny/pipeline" --prompt 'A dog running across a field of golden wheat.'
     --negative-prompt '' --height 64 --width 96 --num-frames 9 --num-inference-steps 4
     --initial-latents "$golden/wan_tiny/cases/pipeline_t2v_fp32.safetensors")
hv15=(generate --device cpu --model "$golden/hv15_tiny/pipeline"
      --prompt 'A red neon sign that says "OPEN 24/7" glowing above a diner door at night.' --height 64 --width 96
      --num-frames 9 --num-inference-steps 4 --seed 42
      --initial-latents "$golden/hv15_tiny/cases/pipeline_t2v.safetensors")
declare -A scale=([wan]=5 [hv15]=6.0)

for family in wan hv15; do
  declare -n args=$family
  args+=(--guidance-scale "${scale[$family]}")
  "$dattn" "${args[@]}" --guidance sequential --output "$work/$family-single.safetensors" >/dev/null 2>"$work/$family-single.err" ||
    fail "$family: the single-process run failed: $(cat "$work/$family-single.err")"
  mkdir -p "$work/$family-cfg"
  (cd "$work/$family-cfg" && launch "$dattn" "${args[@]}" --cfg-parallel-size 2 --output "$work/$family-cfg2.safetensors" \
     --report "$work/$family-cfg2.json" >"$work/$family-cfg2.out" 2>"$work/$family-cfg2.err") ||
    fail "$family: the mpirun -np 2 run failed: $(cat "$work/$family-cfg2.err")"
  cmp "$work/$family-single.safetensors" "$work/$family-cfg2.safetensors" ||
    fail "$family: cfg-parallel frames differ from the single-process run's"
  grep -q '"guidance": "cfg-parallel"' "$work/$family-cfg2.json" || fail "$family: the report does not say cfg-parallel"
  grep -q '"ranks": 2' "$work/$family-cfg2.json" || fail "$family: the report does not say 2 ranks"
  # Logged once: rank 1 prints nothing, so the self-attention role's line appears once.
  n=$(grep -c "for role='self'" "$work/$family-cfg2.err" || true)
  [ "$n" = 1 ] || fail "$family: role='self' logged $n times, expected once"
  n=$(grep -c "step 4/4" "$work/$family-cfg2.err" || true)
  [ "$n" = 1 ] || fail "$family: the last step's progress line printed $n times, expected once"
  [ -z "$(ls -A "$work/$family-cfg")" ] || fail "$family: a rank wrote into its working folder"
  echo "$family: cfg-parallel over 2 ranks == single process (bit-exact)"
done

# Guidance off with --cfg-parallel-size 2: every rank refuses it before any work, nothing is written.
unset -n args
wan_off=("${wan[@]:0:${#wan[@]}-2}" --guidance-scale 1)
if launch "$dattn" "${wan_off[@]}" --cfg-parallel-size 2 --output "$work/off.safetensors" \
    >"$work/off.out" 2>"$work/off.err"; then
  fail "guidance scale 1 with --cfg-parallel-size 2 was accepted"
fi
grep -q "dattn: error: --cfg-parallel-size 2 runs the conditional and unconditional branches on two ranks, but this request runs no guidance (guidance scale 1" "$work/off.err" ||
  fail "no refusal naming the guidance scale: $(cat "$work/off.err")"
[ ! -e "$work/off.safetensors" ] || fail "a refused run wrote its output"
# Degrees whose product is not the 2 ranks started.
if launch "$dattn" "${wan[@]}" --output "$work/p.safetensors" >"$work/p.out" 2>"$work/p.err"; then
  fail "2 ranks with every degree 1 were accepted"
fi
grep -q "= 1 ranks, but 2 ranks were started" "$work/p.err" || fail "no refusal of the product: $(cat "$work/p.err")"
# A degree the tiny Wan transformer's 2 heads cannot split (HunyuanVideo-1.5's, and tensor parallel's:
# CliUlyssesHv15.*, CliTensorParallel.*), and a guidance mode CFG parallel cannot run.
refused() {  # refused RANKS MESSAGE ARGS...: every rank exits with an error containing MESSAGE
  local ranks=$1 message=$2
  shift 2
  if "$mpirun" --oversubscribe --bind-to none -np "$ranks" "$dattn" "$@" >"$work/r.out" 2>"$work/r.err"; then
    fail "accepted: $*"
  fi
  grep -qF "dattn: error: $message" "$work/r.err" || fail "no refusal '$message': $(cat "$work/r.err")"
}
refused 4 "--ulysses-degree 4: WanPipeline's transformer has 2 attention heads, not a multiple of 4; expected 1 or 2" \
  "${wan[@]}" --ulysses-degree 4 --output "$work/u.safetensors"
refused 2 "--cfg-parallel-size 2 with --guidance batched: expected --guidance cfg-parallel" "${wan[@]}" \
  --cfg-parallel-size 2 --guidance batched --output "$work/b.safetensors"
echo "refusals: ok"
