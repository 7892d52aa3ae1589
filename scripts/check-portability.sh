#!/usr/bin/env bash
# Portability of the C++ sources beyond the GCC and libstdc++ that build them (CI runs it after the
# tests; 4 min 40 s measured on 2 cores shared with other builds). Fails, naming the file, when
#   1. a .cc of src/ or tools/ does not compile with a second compiler and standard library: clang++
#      with libc++ (-fsyntax-only, the CPU build's flags); or
#   2. a .cc names a fixed-width integer type (std::uint64_t, ...) while neither it nor any project
#      header it includes includes <cstdint>: GCC 13's libstdc++ no longer brings <cstdint> in through
#      <string> and friends, while GCC 12 and libc++ still do, so neither compiler here would notice.
# Usage: [JOBS=n] scripts/check-portability.sh [FILE.cc...]   (default: every .cc of src/ and tools/)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
for tool in clang++ g++ pkg-config; do
  command -v "$tool" >/dev/null || { echo "check-portability: $tool not found; run scripts/install-deps.sh" >&2; exit 1; }
done

flags=(-std=c++20 -Iinclude -Isrc -Itools -fopenmp $(pkg-config --cflags openblas sentencepiece))
ffmpeg_modules=(libavcodec libavformat libavutil libswscale)
if [ $# -gt 0 ]; then files=$(printf '%s\n' "$@"); else files=$(find src tools -name '*.cc' | sort); fi
if pkg-config --exists "${ffmpeg_modules[@]}"; then
  flags+=(-DDATTN_WITH_FFMPEG=1 $(pkg-config --cflags "${ffmpeg_modules[@]}"))
else  # as CMakeLists.txt: the FFmpeg encoders and reader are left out without FFmpeg
  files=$(grep -Ev 'src/io/video/(mp4_writer|png_writer|video_reader)\.cc$' <<<"$files")
fi
# The MPI communicator with OpenMPI's headers (mpi.h outside the default path), left out without them as
# CMake does; the NCCL one needs CUDA's headers, checked by the CUDA build only.
if pkg-config --exists ompi-c; then
  flags+=($(pkg-config --cflags ompi-c) -DOMPI_SKIP_MPICXX=1)
else
  files=$(grep -Ev 'src/parallel/mpi_[a-z_]+\.cc$' <<<"$files")
fi
files=$(grep -Ev 'src/parallel/nccl_[a-z_]+\.cc$' <<<"$files")
count=$(wc -l <<<"$files")
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

start=$SECONDS
echo "check-portability: clang++ -stdlib=libc++ -fsyntax-only on $count files"
if ! xargs -P "$jobs" -n 4 clang++ -stdlib=libc++ -fsyntax-only -Werror=return-type "${flags[@]}" \
    <<<"$files" 2>"$log/clang.txt"; then
  cat "$log/clang.txt" >&2
  echo "check-portability: FAILED: the files above do not compile with clang++ and libc++" >&2
  exit 1
fi

echo "check-portability: <cstdint> for fixed-width integer types on $count files"
# GCC 13's libstdc++ no longer brings <cstdint> in through <string> and friends, so a file that names
# std::uint64_t & co. needs <cstdint> (or <cinttypes>, <stdint.h>) from itself or a project header it
# includes. The preprocessor lists those headers (-MM); grep does the rest.
fixed_width='\b(std::)?u?int(8|16|32|64|ptr|max)_t\b'
failed=0
while read -r file; do
  # Headers behind #ifdef DATTN_WITH_CUDA / DATTN_WITH_FFMPEG count too (-MG: missing CUDA headers are fine).
  closure=$( (g++ "${flags[@]}" -MM -MG "$file"; g++ "${flags[@]}" -DDATTN_WITH_CUDA=1 -MM -MG "$file";
              g++ "${flags[@]}" -UDATTN_WITH_FFMPEG -MM -MG "$file") |
            tr -d '\\' | tr ' ' '\n' | grep -E '\.(h|cuh|hpp|cc)$' | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
  if grep -qE "$fixed_width" $closure && ! grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(cstdint|cinttypes|stdint\.h|inttypes\.h)>' $closure; then
    echo "$file: names a fixed-width integer type ($(grep -lE "$fixed_width" $closure | tr '\n' ' ')) but neither it nor a project header it includes includes <cstdint>" >&2
    failed=1
  fi
done <<<"$files"
if [ "$failed" -ne 0 ]; then
  echo "check-portability: FAILED: add #include <cstdint> to the files above (GCC 13 requires it)" >&2
  exit 1
fi
echo "check-portability: ok ($((SECONDS - start)) s)"
