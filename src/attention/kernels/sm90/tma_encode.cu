#include "attention/kernels/sm90/tma_encode.h"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

namespace dattn::hopper_tma {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn(const char* who) {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &status) ==
            cudaSuccess &&
        status == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  });
  if (!fn) throw std::runtime_error(std::string(who) + ": cuTensorMapEncodeTiled is not available from the driver");
  return fn;
}

}  // namespace

CUtensorMap encode_tiled(const char* who, CUtensorMapDataType type, int rank, const void* ptr,
                         const std::uint64_t* dims, const std::uint64_t* strides, const std::uint32_t* box,
                         CUtensorMapSwizzle swizzle) {
  CUtensorMap map;
  std::memset(&map, 0, sizeof(map));
  cuuint64_t d[5], s[4];
  cuuint32_t b[5], e[5];
  for (int i = 0; i < rank; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
    e[i] = 1;
    if (i + 1 < rank) s[i] = strides[i];
  }
  const CUresult r = encode_fn(who)(&map, type, static_cast<cuuint32_t>(rank), const_cast<void*>(ptr), d, s, b, e,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string(who) + ": cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                             ")");
  return map;
}

CUtensorMap bshd16_map(const char* who, const void* ptr, std::int64_t batch, std::int64_t seq, std::int64_t heads,
                       std::int64_t D, bool fp16, unsigned rows) {
  const std::uint64_t dims[4] = {std::uint64_t(D), std::uint64_t(heads), std::uint64_t(seq), std::uint64_t(batch)};
  const std::uint64_t strides[3] = {std::uint64_t(D * 2), std::uint64_t(heads * D * 2),
                                    std::uint64_t(seq * heads * D * 2)};
  const std::uint32_t box[4] = {64, 1, rows, 1};
  return encode_tiled(who, fp16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, ptr, dims,
                      strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
}

}  // namespace dattn::hopper_tma
