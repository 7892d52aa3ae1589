#!/usr/bin/env bash
# The CPU tree under AddressSanitizer + UndefinedBehaviorSanitizer, built once with clang into
# build-san/ (libFuzzer's coverage instrumentation included), for two jobs:
#   scripts/sanitize.sh tests          every CPU test (ctest) under ASan + UBSan; any report fails it
#   scripts/sanitize.sh fuzz [SECONDS] each libFuzzer target of tests/fuzz/ for SECONDS (default 60) from
#                                      its seed corpus (tests/fuzz/corpus/<target>/, copied: the repo is
#                                      not written); a crash leaves its input in build-san/fuzz-artifacts/
# CI runs both (.ci/run); `make sanitize` and `make fuzz` call them. BUILD_SAN_DIR overrides build-san.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-tests}
dir=${BUILD_SAN_DIR:-build-san}
jobs=${JOBS:-$(nproc)}
command -v clang++ >/dev/null || { echo "sanitize: clang++ not found; run scripts/install-deps.sh" >&2; exit 1; }

# -O1 for the layers and tests: Release's -O3 is replaced (it followed -O1 and won: a layer file took 6.7 CPU s
# instead of 5.3), and tools/ takes -O0 (DATTN_TOOLS_OPT); docs/ci-time.md has the measurements.
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link -fno-omit-frame-pointer -O1 -g1"
# Without MPI: OpenMPI 4.1's MPI_Init leaves allocations that LeakSanitizer reports at exit, from plugins
# it has unloaded by then (stacks of "<unknown module>", so no suppression can name them); the mpirun tests
# run in the normal build (make test), and here the MPI collectives' binary skips, saying why.
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
    -DDATTN_CUDA=off -DDATTN_MPI=off -DDATTN_BENCH=OFF -DDATTN_FUZZ=ON "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" \
    -DCMAKE_CXX_FLAGS_RELEASE=-DNDEBUG -DCMAKE_C_FLAGS_RELEASE=-DNDEBUG -DDATTN_TOOLS_OPT=-O0 \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" >/dev/null
fi
# allocator_may_return_null: an allocation no machine can meet throws std::bad_alloc as without ASan (the
# tests check dattn turns it into a clear error) instead of ASan aborting.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

case "$mode" in
  tests)
    cmake --build "$dir" -j "$jobs"
    start=$SECONDS
    (cd "$dir" && OMP_WAIT_POLICY=passive ctest --output-on-failure -j "$jobs")
    echo "sanitize: every CPU test passed under ASan + UBSan in $((SECONDS - start)) s"
    ;;
  fuzz)
    seconds=${2:-60}
    targets=$(cd tests/fuzz && ls fuzz_*.cc | sed 's/\.cc$//')
    cmake --build "$dir" -j "$jobs" --target $targets
    mkdir -p "$dir/fuzz-artifacts"
    # One fuzzer a core at a time (each is single-threaded): the same SECONDS per target in less wall time.
    fuzz_one() {
      local t=$1 work
      set -euo pipefail
      work=$(mktemp -d)
      cp tests/fuzz/corpus/"$t"/* "$work"/
      echo "sanitize: fuzzing $t for $seconds s ($(ls "$work" | wc -l) seeds)"
      # -rss_limit_mb bounds a runaway allocation as a finding; -max_len keeps inputs near config size.
      if ! "$dir/tests/fuzz/$t" "$work" -max_total_time="$seconds" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
           -artifact_prefix="$dir/fuzz-artifacts/$t-" -print_final_stats=1 >"$dir/fuzz-$t.log" 2>&1; then
        tail -40 "$dir/fuzz-$t.log" >&2
        echo "sanitize: FAILED: $t found a crash (input in $dir/fuzz-artifacts/)" >&2
        rm -rf "$work"
        return 1
      fi
      echo "sanitize: fuzzed $t for $seconds s: $(grep -E "^stat::number_of_executed_units|^stat::new_units_added" \
        "$dir/fuzz-$t.log" | tr '\n' ' ')corpus $(ls "$work" | wc -l) inputs"
      rm -rf "$work"
    }
    export -f fuzz_one; export dir seconds
    printf '%s\n' $targets | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$1"' _ {} || exit 1
    ;;
  *) echo "usage: scripts/sanitize.sh tests | fuzz [SECONDS]" >&2; exit 2 ;;
esac
