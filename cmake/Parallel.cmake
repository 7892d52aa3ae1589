# The transports of the parallel layer (src/parallel). OpenMPI (Debian's libopenmpi-dev) starts and joins
# the ranks and moves CPU tensors; NCCL moves CUDA tensors, its bootstrap id passed through MPI.
# DATTN_MPI=auto builds the MPI communicator when MPI is found, on requires it, off builds without (a
# run launched with several ranks then says this build has no MPI). NCCL is used when CUDA is built and
# nccl.h / libnccl are found (DATTN_NCCL=auto), required with on, skipped with off.
set(DATTN_MPI "auto" CACHE STRING "MPI communicator (OpenMPI): auto, on or off")
set_property(CACHE DATTN_MPI PROPERTY STRINGS auto on off)
set(DATTN_HAVE_MPI OFF)
if(NOT DATTN_MPI STREQUAL "off")
  enable_language(C)  # FindMPI's C component checks its compiler wrapper with the C compiler
endif()
if(DATTN_MPI STREQUAL "on")
  find_package(MPI REQUIRED COMPONENTS C)
  set(DATTN_HAVE_MPI ON)
elseif(DATTN_MPI STREQUAL "auto")
  find_package(MPI COMPONENTS C)
  if(MPI_C_FOUND)
    set(DATTN_HAVE_MPI ON)
  endif()
endif()
# mpirun for the multi-rank tests (tests/CMakeLists.txt).
if(DATTN_HAVE_MPI AND NOT MPIEXEC_EXECUTABLE)
  find_program(MPIEXEC_EXECUTABLE NAMES mpirun mpiexec)
endif()
message(STATUS "dattn: MPI communicator: ${DATTN_HAVE_MPI}")

set(DATTN_NCCL "auto" CACHE STRING "NCCL communicator for CUDA tensors: auto, on or off")
set_property(CACHE DATTN_NCCL PROPERTY STRINGS auto on off)
set(DATTN_HAVE_NCCL OFF)
if(DATTN_HAVE_CUDA AND DATTN_HAVE_MPI AND NOT DATTN_NCCL STREQUAL "off")
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(DATTN_HAVE_NCCL ON)
  endif()
endif()
if(DATTN_NCCL STREQUAL "on" AND NOT DATTN_HAVE_NCCL)
  message(FATAL_ERROR "DATTN_NCCL=on: NCCL needs a CUDA build (DATTN_CUDA), MPI (DATTN_MPI) and nccl.h with libnccl")
endif()
message(STATUS "dattn: NCCL communicator: ${DATTN_HAVE_NCCL}")
