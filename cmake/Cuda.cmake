# Optional CUDA build. auto: build when nvcc is found; on: required; off: skipped.
set(DATTN_HAVE_CUDA OFF)
string(TOLOWER "${DATTN_CUDA}" _dattn_cuda)
if(NOT _dattn_cuda MATCHES "^(auto|on|off)$")
  message(FATAL_ERROR "DATTN_CUDA='${DATTN_CUDA}': expected auto, on or off")
endif()
if(NOT _dattn_cuda STREQUAL "off")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc's C++20 flag; it is passed by hand (see DATTN_CUDA_FLAGS).
    set(CMAKE_CUDA_STANDARD 17)
    set(DATTN_CUDA_FLAGS --expt-relaxed-constexpr)
    # Static runtime so a binary built here runs on the GPU machine (see docs/gpu.md).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
    find_package(CUDAToolkit REQUIRED)
    # sm_90a for Hopper fast paths, sm_80 for the portable path.
    set(DATTN_CUDA_ARCHS "80;90a" CACHE STRING "CUDA architectures")
    set(DATTN_HAVE_CUDA ON)
    # cuDNN (the Wan VAE's convolutions), linked dynamically: the toolkit's copy (/usr/local/cuda) or a
    # system package (/usr/include, /usr/lib/<arch>). Required by a CUDA build.
    find_path(DATTN_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    find_library(DATTN_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)
    if(NOT DATTN_CUDNN_INCLUDE_DIR OR NOT DATTN_CUDNN_LIBRARY)
      message(FATAL_ERROR "dattn: the CUDA build needs cuDNN 9 (cudnn.h: '${DATTN_CUDNN_INCLUDE_DIR}', "
                          "libcudnn: '${DATTN_CUDNN_LIBRARY}'). Install it (e.g. the cudnn9-cuda-13 package), "
                          "pass -DDATTN_CUDNN_INCLUDE_DIR=... -DDATTN_CUDNN_LIBRARY=..., or build with -DDATTN_CUDA=off")
    endif()
    add_library(dattn_cudnn INTERFACE IMPORTED)
    target_include_directories(dattn_cudnn INTERFACE ${DATTN_CUDNN_INCLUDE_DIR})
    target_link_libraries(dattn_cudnn INTERFACE ${DATTN_CUDNN_LIBRARY})
    message(STATUS "dattn: cuDNN ${DATTN_CUDNN_LIBRARY}")
    message(STATUS "dattn: CUDA build enabled (${CMAKE_CUDA_COMPILER}, archs ${DATTN_CUDA_ARCHS})")
  elseif(_dattn_cuda STREQUAL "on")
    message(FATAL_ERROR "DATTN_CUDA=on but no CUDA compiler (nvcc) was found; install CUDA or use DATTN_CUDA=auto|off")
  else()
    message(STATUS "dattn: nvcc not found, building without CUDA")
  endif()
endif()
