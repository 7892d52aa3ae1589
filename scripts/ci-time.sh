#!/usr/bin/env bash
# Where .ci/run's time goes, measured on a fresh clone: each phase's wall and CPU seconds (GNU time counts
# every descendant it waits for), each compile's CPU seconds (a compiler launcher), each test's seconds
# (ctest), then a summary by area. CPU seconds hold under other load, so a busy machine still gives a fair
# breakdown; wall seconds are only right on an idle one. docs/ci-time.md has the tables it printed.
# Usage: scripts/ci-time.sh [REV] [LOG_DIR]   (default HEAD and /tmp/dattn-ci-time; clones into LOG_DIR/clone)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
logs=$(realpath -m "${2:-/tmp/dattn-ci-time}")
rm -rf "$logs" && mkdir -p "$logs"
git clone -q "$repo" "$logs/clone" && git -C "$logs/clone" checkout -q "$rev" || exit 2
cd "$logs/clone" || exit 2
command -v /usr/bin/time >/dev/null || { echo "ci-time: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }

launcher=$logs/cpu-launcher.sh
cat >"$launcher" <<'EOF'
#!/usr/bin/env bash
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
exec /usr/bin/time -a -o "$DATTN_CPU_LOG" -f "%U %S %e $out" "$@"
EOF
chmod +x "$launcher"
phase() { local name=$1; shift; /usr/bin/time -a -o "$logs/phases.txt" -f "$name wall %e s cpu %U+%S s rc %x" "$@"; }

# .ci/run's four commands, each a phase; CMake takes the launcher from the environment at configure time.
export CMAKE_CXX_COMPILER_LAUNCHER=$launcher CMAKE_CUDA_COMPILER_LAUNCHER=$launcher
export DATTN_CPU_LOG=$logs/objects.txt
phase "make test" make test >"$logs/make-test.txt" 2>&1
phase portability scripts/check-portability.sh >"$logs/portability.txt" 2>&1
export DATTN_CPU_LOG=$logs/objects-san.txt
phase "sanitize tests" scripts/sanitize.sh tests >"$logs/san-tests.txt" 2>&1
phase "sanitize fuzz" scripts/sanitize.sh fuzz 60 >"$logs/fuzz.txt" 2>&1

summary() {  # CPU seconds of the compiles in $1 by area
  awk '{c = $1 + $2; t = $4; k = "src (other)"
        if (t ~ /\.cu\.o$/) k = "CUDA objects"
        else if (t ~ /dattn\.dir\/tools/) k = "tools/dattn"
        else if (t ~ /tests\/fuzz/) k = "fuzzers"
        else if (t ~ /tests\/CMakeFiles/) k = "tests"
        else if (t ~ /bench/) k = "bench"
        else if (match(t, /dattn_[a-z]+\.dir/)) k = "src " substr(t, RSTART + 6, RLENGTH - 10)
        s[k] += c; n[k]++; all += c}
       END {for (k in s) printf "| %s | %d | %.0f |\n", k, n[k], s[k]; printf "| all | %d | %.0f |\n", NR, all}' "$1" |
    sort -t'|' -k4 -rn
}
echo "== phases"; cat "$logs/phases.txt"
grep -h "Total Test time" "$logs/make-test.txt"; grep -h "every CPU test passed" "$logs/san-tests.txt"
echo "== build: CPU seconds by area (| area | objects | CPU s |)"; summary "$logs/objects.txt"
echo "== sanitizer build: CPU seconds by area"; summary "$logs/objects-san.txt"
echo "== the 15 slowest tests"
grep -hE "Test +#" "$logs/make-test.txt" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec/\2 \1/' | sort -rn | head -15
echo "== the 15 slowest tests under ASan + UBSan"
grep -hE "Test +#" "$logs/san-tests.txt" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec/\2 \1/' | sort -rn | head -15
grep -q " rc 0$" "$logs/phases.txt" && ! grep -vq " rc 0$" "$logs/phases.txt"
