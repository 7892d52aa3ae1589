# One static library per layer of src/ (cmake/CheckLayers.cmake states the order):
#   dattn_core (src/core, with src/core/cuda) <- dattn_io, dattn_text, dattn_parallel <- dattn_attention, dattn_ops
#   <- dattn_models <- dattn_pipeline <- dattn_serve <- the dattn executable (tools/dattn)
# A layer links only the layers below it, so a call upward or sideways fails to link as an include
# upward or sideways fails the configure-time check.

# DATTN_WITH_CUDA / DATTN_WITH_FFMPEG for every library, tool, test and benchmark (through dattn_core).
add_library(dattn_features INTERFACE)
if(DATTN_HAVE_CUDA)
  target_compile_definitions(dattn_features INTERFACE DATTN_WITH_CUDA=1)
endif()
if(DATTN_HAVE_FFMPEG)
  target_compile_definitions(dattn_features INTERFACE DATTN_WITH_FFMPEG=1)
endif()

# The headers most C++ files of src/ and tools/ parse, precompiled once a target (CMake leaves .cu out):
# nlohmann/json.hpp alone takes 1.4 of a file's ~2.8 CPU s at -O3 (src/models/wan/block.cc: 2.1 s of it
# parsing), and the public headers of attention and models bring it into most files. Each file still
# names what it uses: scripts/check-portability.sh compiles every file alone, without these, with clang
# and libc++ (docs/ci-time.md).
function(dattn_precompile_common_headers target)
  target_precompile_headers(${target} PRIVATE <nlohmann/json.hpp> <algorithm> <cmath> <cstdint> <functional> <map>
                            <memory> <optional> <stdexcept> <string> <string_view> <utility> <vector>)
endfunction()

# dattn_add_layer(<layer> [DEPS <targets>...] [EXCLUDE <regex>...]): the library dattn_<layer> from
# every .cc under src/<layer> (and every .cu in a CUDA build), globbed so a new file joins its layer.
# DEPS are public; the layer's own src/ headers are private to the layers (tests add src/ themselves).
function(dattn_add_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 L "" "" "DEPS;EXCLUDE")
  set(_dir ${PROJECT_SOURCE_DIR}/src/${layer})
  file(GLOB_RECURSE _sources CONFIGURE_DEPENDS ${_dir}/*.cc)
  set(_cuda_sources "")
  if(DATTN_HAVE_CUDA)
    file(GLOB_RECURSE _cuda_sources CONFIGURE_DEPENDS ${_dir}/*.cu)
  endif()
  list(APPEND _sources ${_cuda_sources})
  foreach(_regex IN LISTS L_EXCLUDE)
    list(FILTER _sources EXCLUDE REGEX "${_regex}")
  endforeach()
  set(_target dattn_${layer})
  add_library(${_target} STATIC ${_sources})
  target_include_directories(${_target} PUBLIC ${PROJECT_SOURCE_DIR}/include PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${_target} PUBLIC ${L_DEPS})
  dattn_precompile_common_headers(${_target})
  if(_cuda_sources)
    set_target_properties(${_target} PROPERTIES CUDA_ARCHITECTURES "${DATTN_CUDA_ARCHS}"
                                                CUDA_SEPARABLE_COMPILATION OFF)
    target_compile_options(${_target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${DATTN_CUDA_FLAGS}>)
  endif()
endfunction()

dattn_add_layer(core DEPS dattn_features nlohmann_json::nlohmann_json OpenMP::OpenMP_CXX Threads::Threads)
if(DATTN_HAVE_CUDA)
  # Static runtime so a binary built here runs on the GPU machine (README, "Running on a GPU").
  target_link_libraries(dattn_core PUBLIC CUDA::cudart_static)
endif()

# The FFmpeg encoders and reader need FFmpeg; io/video/no_ffmpeg.cc stands in without it.
set(_io_exclude "")
if(NOT DATTN_HAVE_FFMPEG)
  set(_io_exclude "src/io/video/(mp4_writer|png_writer|video_reader)\\.cc$")
endif()
dattn_add_layer(io DEPS dattn_core EXCLUDE ${_io_exclude})
if(DATTN_HAVE_FFMPEG)
  target_link_libraries(dattn_io PRIVATE PkgConfig::FFMPEG)
endif()

dattn_add_layer(text DEPS dattn_core)
target_link_libraries(dattn_text PRIVATE PkgConfig::SENTENCEPIECE)  # the T5 tokenizer
# The byte-level BPE tokenizer: PCRE2 runs tokenizer.json's split regex, utf8proc its NFC normalizer.
target_link_libraries(dattn_text PRIVATE PkgConfig::PCRE2 PkgConfig::UTF8PROC)

# The communicators of multi-rank runs (cmake/Parallel.cmake): MPI for CPU tensors and the ranks' start,
# NCCL for CUDA tensors; without MPI, parallel/no_mpi.cc stands in (a multi-rank launch is refused).
set(_parallel_exclude "")
if(DATTN_HAVE_MPI)
  list(APPEND _parallel_exclude "src/parallel/no_mpi\\.cc$")
else()
  list(APPEND _parallel_exclude "src/parallel/mpi_[a-z_]+\\.cc$")
endif()
if(NOT DATTN_HAVE_NCCL)
  list(APPEND _parallel_exclude "src/parallel/nccl_[a-z_]+\\.cc$")
endif()
dattn_add_layer(parallel DEPS dattn_core EXCLUDE ${_parallel_exclude})
if(DATTN_HAVE_MPI)
  target_link_libraries(dattn_parallel PRIVATE MPI::MPI_C)
  # mpi.h from C++ would declare OpenMPI's deprecated C++ bindings, which libmpi (C) does not define.
  target_compile_definitions(dattn_parallel PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
endif()
if(DATTN_HAVE_NCCL)
  target_compile_definitions(dattn_parallel PRIVATE DATTN_WITH_NCCL=1)
  target_include_directories(dattn_parallel PRIVATE ${NCCL_INCLUDE_DIR})
  target_link_libraries(dattn_parallel PRIVATE ${NCCL_LIBRARY})
endif()

# cuBLASLt for a layer's GEMMs: the static library when the toolkit has one, so the binary needs no extra
# .so on the GPU machine (CUDA 13 here ships only libcublasLt.so).
function(dattn_link_cublaslt target)
  if(TARGET CUDA::cublasLt_static)
    target_link_libraries(${target} PRIVATE CUDA::cublasLt_static)
  else()
    target_link_libraries(${target} PRIVATE CUDA::cublasLt)
  endif()
endfunction()

dattn_add_layer(attention DEPS dattn_core)
if(DATTN_HAVE_CUDA)
  dattn_link_cublaslt(dattn_attention)  # TORCH_SDPA's GEMM kernel
endif()
# SPARSE_BLOCK's mask sums must round like the CUDA estimator's separate multiplies and adds: no fused
# multiply-add contraction, whatever -march a build adds (GCC contracts by default where FMA exists).
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/attention/backends/sparse_block/block_mask.cc
                            PROPERTIES COMPILE_OPTIONS -ffp-contract=off)

dattn_add_layer(ops DEPS dattn_core)
target_link_libraries(dattn_ops PRIVATE PkgConfig::OPENBLAS)  # CPU GEMM
if(DATTN_HAVE_CUDA)
  dattn_link_cublaslt(dattn_ops)  # the GEMMs of src/ops/cuda
  target_link_libraries(dattn_ops PRIVATE dattn_cudnn)  # ops::CausalConv3d's convolutions (cmake/Cuda.cmake)
endif()

dattn_add_layer(models DEPS dattn_attention dattn_ops dattn_io dattn_text dattn_parallel)

dattn_add_layer(pipeline DEPS dattn_models dattn_parallel)

# The HTTP server of `dattn serve`: the job store in SQLite, HTTP through cpp-httplib (DATTN_SERVE).
if(DATTN_HAVE_SERVE)
  dattn_add_layer(serve DEPS dattn_pipeline PkgConfig::HTTPLIB)
  target_link_libraries(dattn_serve PRIVATE PkgConfig::SQLITE3)
endif()
