#pragma once
// The two 8-bit wgmma forms of the Hopper SAGE_ATTN kernel (sm_90a): S = Q8 K8^T as s8 x s8 -> s32
// (IGMMA, both operands K-major in shared memory) and O_tile = P8 V8 as e4m3 x e4m3 -> f32 (QGMMA, P from
// registers, V^T K-major in shared memory: fp8 wgmma has no transposed operands, which is why V is stored
// transposed by the quantization pass). k = 32 per instruction; every asm only exists on sm_90a.
#include <cstdint>

#include "attention/kernels/sm90/wgmma.cuh"  // DATTN_SM90A, fences, placeholders

namespace dattn::sage::hopper {

// Shared-memory matrix descriptor with an explicit swizzle: 1 = 128B (rows of 128 bytes, 8-row atoms of
// 1024 bytes), 2 = 64B (rows of 64 bytes, atoms of 512 bytes). LBO is unused for K-major operands whose
// k extent fits in one swizzle row, which holds for every operand here.
__device__ __forceinline__ std::uint64_t make_desc_sw(std::uint32_t smem_addr, std::uint32_t sbo, std::uint32_t mode) {
  std::uint64_t desc = 0;
  desc |= static_cast<std::uint64_t>((smem_addr & 0x3FFFF) >> 4);
  desc |= static_cast<std::uint64_t>(1) << 16;  // LBO (unused) = 16 bytes
  desc |= static_cast<std::uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  desc |= static_cast<std::uint64_t>(mode) << 62;
  return desc;
}

#define DATTN_IGMMA_ACC_OPERANDS(d)                                                                    \
  "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),     \
  "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), \
  "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), \
  "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), \
  "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), \
  "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), \
  "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), \
  "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])

// S[64x128] (+)= Q8[64x32] K8[128x32]^T in exact int32; scale_d = 0 overwrites S.
__device__ __forceinline__ void igmma_m64n128k32(std::int32_t* d, std::uint64_t desc_a, std::uint64_t desc_b,
                                                 int scale_d) {
#if DATTN_SM90A
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {" DATTN_WGMMA_ACC_PLACEHOLDERS
               "}, %64, %65, p;\n}\n"
               : DATTN_IGMMA_ACC_OPERANDS(d)
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
#endif
}

// O[64x128] = P8[64x32] V8^T[128x32]^T (fp32 accumulation inside the tensor core); P as four 32-bit
// registers in the m16n8k32 8-bit A layout per warp. `scale_d` = 0 starts a fresh tile sum.
__device__ __forceinline__ void qgmma_m64n128k32(float* d, const std::uint32_t* a, std::uint64_t desc_b, int scale_d) {
#if DATTN_SM90A
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" DATTN_WGMMA_ACC_PLACEHOLDERS
               "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
               : DATTN_WGMMA_ACC_OPERANDS(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
#endif
}

// The head-dim-64 form: O[64x64], 32 accumulators.
__device__ __forceinline__ void qgmma_m64n64k32(float* d, const std::uint32_t* a, std::uint64_t desc_b, int scale_d) {
#if DATTN_SM90A
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {" DATTN_WGMMA_ACC32_PLACEHOLDERS
               "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
               : DATTN_WGMMA_ACC32_OPERANDS(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
#endif
}

// Row sums of P8 by the tensor core: L[64x8] (+)= P8[64x32] ONES[8x32]^T, every column the row's sum
// of the quantized p (the ones tile is one 1024-byte atom of e4m3 1.0, so its swizzle does not matter).
// Per thread: d[0] = d[1] = the sum of row lane / 4, d[2] = d[3] that of row lane / 4 + 8 (of its warp).
__device__ __forceinline__ void qgmma_m64n8k32(float* d, const std::uint32_t* a, std::uint64_t desc_b, int scale_d) {
#if DATTN_SM90A
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, %8, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
#endif
}

}  // namespace dattn::sage::hopper
