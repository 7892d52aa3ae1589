// The run context of a CUDA build: core/run_context.cc compiled into dattn_cuda (see its header comment).
#define DATTN_RUN_CONTEXT_IN_CUDA_LIBRARY 1
#include "core/run_context.cc"
