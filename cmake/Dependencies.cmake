# Third-party libraries, all from Debian packages (see scripts/install-deps.sh).
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(OpenMP REQUIRED)
find_package(Threads REQUIRED)
if(DATTN_TESTS)
  find_package(GTest REQUIRED)
endif()
# Model runtime: OpenBLAS for CPU GEMM, sentencepiece for the T5 tokenizer, FFmpeg for video files.
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavcodec libavformat libavutil libswscale)
