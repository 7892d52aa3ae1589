#pragma once
// wgmma (sm_90a warpgroup MMA) helpers for the Hopper FLASH_ATTN kernel: shared-memory matrix
// descriptors for 128-byte-swizzled tiles and the m64n128k16 (SS, RS) and m64n64k16 (RS) bf16/fp16
// forms the kernel uses.
// Every asm is compiled only for sm_90a; other targets get empty bodies (never executed there).
#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DATTN_SM90A 1
#else
#define DATTN_SM90A 0
#endif

namespace dattn::flash::hopper {

// Matrix descriptor of a 128B-swizzled tile whose swizzle atoms (8 rows x 128 bytes) are 1024-byte
// aligned: start address, leading / stride byte offsets (all >> 4), swizzle mode 1 (128B) in bits 62-63.
//  K-major (Q, K): rows of 128 bytes; SBO = 1024 (next 8-row group), LBO unused (1).
//  MN-major (V as the B operand of P V): LBO = offset of the next 64-column slab, SBO = 1024
//  (with N = 64 there is a single slab and LBO is not used).
__device__ __forceinline__ std::uint64_t make_desc(std::uint32_t smem_addr, std::uint32_t lbo, std::uint32_t sbo) {
  std::uint64_t desc = 0;
  desc |= static_cast<std::uint64_t>((smem_addr & 0x3FFFF) >> 4);
  desc |= static_cast<std::uint64_t>((lbo >> 4) & 0x3FFF) << 16;
  desc |= static_cast<std::uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  desc |= static_cast<std::uint64_t>(1) << 62;
  return desc;
}

__device__ __forceinline__ void wgmma_fence() {
#if DATTN_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if DATTN_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if DATTN_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

// Makes the compiler treat registers as written here, so no use of an asynchronous wgmma's
// accumulator / operand registers moves across a fence or wait.
__device__ __forceinline__ void fence_regs(float* r, int n) {
#pragma unroll
  for (int i = 0; i < n; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
__device__ __forceinline__ void fence_regs(std::uint32_t* r, int n) {
#pragma unroll
  for (int i = 0; i < n; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// The 64 fp32 accumulator registers of one m64n128 wgmma, as asm operands %0..%63.
#define DATTN_WGMMA_ACC_PLACEHOLDERS                                                                  \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                            \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                  \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                  \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define DATTN_WGMMA_ACC_OPERANDS(d)                                                                    \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),     \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// D[64x128] (+)= A[64x16] * B[16x128], A and B from shared memory, both K-major; fp32 accumulators.
// TYPE is f16 or bf16; scale_d = 0 overwrites D.
#define DATTN_WGMMA_SS(TYPE)                                                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                          \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." #TYPE "." #TYPE " {"                    \
               DATTN_WGMMA_ACC_PLACEHOLDERS "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                        \
               : DATTN_WGMMA_ACC_OPERANDS(d)                                                          \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// D[64x128] += A[64x16] * B[16x128], A from registers (4 x 32-bit packed pairs per thread, the
// mma.sync m16n8k16 A layout per warp), B from shared memory MN-major (transposed: V[keys][D]).
#define DATTN_WGMMA_RS(TYPE)                                                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                          \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." #TYPE "." #TYPE " {"                    \
               DATTN_WGMMA_ACC_PLACEHOLDERS "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"          \
               : DATTN_WGMMA_ACC_OPERANDS(d)                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1))

// The 32 fp32 accumulator registers of one m64n64 wgmma, as asm operands %0..%31.
#define DATTN_WGMMA_ACC32_PLACEHOLDERS                                                                \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                            \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define DATTN_WGMMA_ACC32_OPERANDS(d)                                                                  \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),     \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// D[64x64] += A[64x16] * B[16x64]: DATTN_WGMMA_RS with N = 64 (head dim 64), 32 accumulators.
#define DATTN_WGMMA_RS64(TYPE)                                                                         \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                          \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." #TYPE "." #TYPE " {"                     \
               DATTN_WGMMA_ACC32_PLACEHOLDERS "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"      \
               : DATTN_WGMMA_ACC32_OPERANDS(d)                                                        \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1))

template <bool kFp16>
__device__ __forceinline__ void wgmma_ss_m64n128k16(float* d, std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) {
#if DATTN_SM90A
  if constexpr (kFp16) {
    DATTN_WGMMA_SS(f16);
  } else {
    DATTN_WGMMA_SS(bf16);
  }
#endif
}

template <bool kFp16>
__device__ __forceinline__ void wgmma_rs_m64n128k16(float* d, const std::uint32_t* a, std::uint64_t desc_b) {
#if DATTN_SM90A
  if constexpr (kFp16) {
    DATTN_WGMMA_RS(f16);
  } else {
    DATTN_WGMMA_RS(bf16);
  }
#endif
}

template <bool kFp16>
__device__ __forceinline__ void wgmma_rs_m64n64k16(float* d, const std::uint32_t* a, std::uint64_t desc_b) {
#if DATTN_SM90A
  if constexpr (kFp16) {
    DATTN_WGMMA_RS64(f16);
  } else {
    DATTN_WGMMA_RS64(bf16);
  }
#endif
}

}  // namespace dattn::flash::hopper
