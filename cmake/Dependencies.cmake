# Third-party libraries, all from Debian packages (see scripts/install-deps.sh).
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(OpenMP REQUIRED)
find_package(Threads REQUIRED)
if(DATTN_TESTS)
  find_package(GTest REQUIRED)
endif()
# Model runtime: OpenBLAS for CPU GEMM, sentencepiece for the T5 tokenizer, PCRE2 (the BPE split regex) and
# utf8proc (NFC) for the byte-level BPE tokenizer, FFmpeg for video files.
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
# dattn serve: SQLite keeps the job store, cpp-httplib (Debian's compiled library) serves HTTP.
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# DATTN_VIDEO=auto writes mp4/png through FFmpeg when its libraries are found, on requires them, off
# builds without (only .safetensors video output; for machines without FFmpeg, e.g. the GPU machine).
set(DATTN_VIDEO "auto" CACHE STRING "mp4/png output through FFmpeg: auto, on or off")
set_property(CACHE DATTN_VIDEO PROPERTY STRINGS auto on off)
set(DATTN_HAVE_FFMPEG OFF)
if(DATTN_VIDEO STREQUAL "on")
  pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavcodec libavformat libavutil libswscale)
  set(DATTN_HAVE_FFMPEG ON)
elseif(DATTN_VIDEO STREQUAL "auto")
  pkg_check_modules(FFMPEG IMPORTED_TARGET libavcodec libavformat libavutil libswscale)
  set(DATTN_HAVE_FFMPEG ${FFMPEG_FOUND})
endif()
message(STATUS "dattn: mp4/png output through FFmpeg: ${DATTN_HAVE_FFMPEG}")
