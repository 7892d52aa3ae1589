// FLASH_ATTN on Hopper: support predicate, kernel selection (the `kernel` extra), TMA descriptors
// (tma_encode.h) and launch with the tuning knobs of hopper_tuning.h.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/kernels/flash/hopper/flash_hopper.h"
#include "attention/kernels/flash/hopper/flash_hopper_kernel.cuh"
#include "attention/kernels/flash/hopper/hopper_tuning.h"
#include "attention/kernels/sm90/tma_encode.h"
#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"
#include "core/cuda/dependent_launch.cuh"
#include "dattn/core/error.h"

namespace dattn::flash {
namespace {

using hopper::HopperConfig;
using hopper::HopperParams;

int device_cc() {
  int device = 0, major = 0, minor = 0;
  DATTN_CUDA_CHECK(cudaGetDevice(&device));
  DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Head dims with a kernel instantiation (flash_hopper_supports and the dispatch below agree on these).
bool head_dim_supported(std::int64_t d) { return d == 64 || d == 128; }

CUtensorMap make_map(const void* ptr, std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t D,
                     bool fp16, unsigned rows) {
  return hopper_tma::bshd16_map("FLASH_ATTN (hopper)", ptr, batch, seq, heads, D, fp16, rows);
}

// SM count of a device index: constant for the process, kept per index (one lookup each).
int sm_count(int device) {
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<int>, kMaxDevices> counts{};
  if (device < 0 || device >= kMaxDevices)
    throw std::runtime_error("FLASH_ATTN (hopper): device index " + std::to_string(device) + " out of range");
  int n = counts[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (n == 0) {
    DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    counts[static_cast<std::size_t>(device)].store(n, std::memory_order_relaxed);
  }
  return n;
}

template <int kHeadDim, bool kFp16, bool kPingPong, hopper::KeyWalk kWalk>
void launch(const HopperParams& params, dim3 grid, cudaStream_t stream, bool dependent) {
  using Cfg = HopperConfig<kHeadDim>;
  const auto kernel = hopper::flash_hopper_kernel<kHeadDim, kFp16, kPingPong, kWalk>;
  DATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  if (hopper::listed_walk(kWalk) && dependent) {
    cuda::launch_dependent(kernel, grid, dim3(Cfg::kThreads), Cfg::kSmemBytes, stream, params);
  } else {
    kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params);
    DATTN_CUDA_CHECK(cudaGetLastError());
  }
}

template <int kHeadDim, hopper::KeyWalk kWalk>
void launch_dim(const HopperParams& params, dim3 grid, cudaStream_t stream, bool fp16, const HopperTuning& t) {
  const bool dep = t.sparse_dependent_launch;
  if (fp16)
    t.pingpong ? launch<kHeadDim, true, true, kWalk>(params, grid, stream, dep)
               : launch<kHeadDim, true, false, kWalk>(params, grid, stream, dep);
  else
    t.pingpong ? launch<kHeadDim, false, true, kWalk>(params, grid, stream, dep)
               : launch<kHeadDim, false, false, kWalk>(params, grid, stream, dep);
}

}  // namespace

bool flash_hopper_supports(const AttentionShape& shape, int cc) {
  if (cc < 90 || cc >= 100) return false;
  if (shape.dtype != DType::BF16 && shape.dtype != DType::F16) return false;
  if (!head_dim_supported(shape.head_dim)) return false;
  if (shape.mask == MaskKind::General) return false;
  if (shape.heads_kv <= 0 || shape.heads_q % shape.heads_kv != 0) return false;
  constexpr std::int64_t kIntMax = 0x7fffffff;
  if (shape.seq_q > kIntMax || shape.seq_k > kIntMax || shape.heads_q > 65535 || shape.batch > 65535) return false;
  // TMA: every dimension below 2^32, strides below 2^40 bytes.
  if (shape.seq_k * shape.heads_kv * shape.head_dim * 2 >= (std::int64_t(1) << 40) ||
      shape.seq_q * shape.heads_q * shape.head_dim * 2 >= (std::int64_t(1) << 40))
    return false;
  return true;
}

bool flash_hopper_handles(const AttentionProblem& problem, KernelChoice choice) {
  if (choice == KernelChoice::Portable) return false;
  const bool ok = flash_hopper_supports(problem.shape, device_cc()) && problem.key_mask == nullptr &&
                  problem.softmax_scale() > 0.f && aligned16(problem.q) && aligned16(problem.k) &&
                  aligned16(problem.v) && aligned16(problem.out);
  if (!ok && choice == KernelChoice::Hopper)
    throw UserError("FLASH_ATTN (cuda): extra kernel 'hopper' but the Hopper kernel cannot run " +
                    problem.shape.describe() + " on this device (needs sm_90, bf16/fp16, D=64 or 128, key lengths "
                    "not a key mask, positive scale)");
  return ok;
}

void flash_attention_hopper(const AttentionProblem& problem, const HopperTileLists* lists) {
  const AttentionShape& sh = problem.shape;
  if (sh.batch == 0 || sh.seq_q == 0 || sh.heads_q == 0) return;
  const bool fp16 = sh.dtype == DType::F16;
  const auto stream = dattn::cuda::stream_or_current(problem.stream);
  // seq_k == 0: the kernel writes zeros without touching K/V; keep the maps valid with extent 1.
  const std::int64_t sk_map = sh.seq_k > 0 ? sh.seq_k : 1;
  HopperParams params{};
  const std::int64_t D = sh.head_dim;
  if (!head_dim_supported(D))
    throw std::runtime_error("FLASH_ATTN (hopper): unsupported head dim " + std::to_string(D));
  constexpr unsigned kBlockM = HopperConfig<128>::kBlockM;
  static_assert(kBlockM == HopperConfig<64>::kBlockM);
  params.tm_q = make_map(problem.q, sh.batch, sh.seq_q, sh.heads_q, D, fp16, kBlockM);
  params.tm_k = make_map(problem.k ? problem.k : problem.q, sh.batch, sk_map, sh.heads_kv, D, fp16, kBlockM);
  params.tm_v = make_map(problem.v ? problem.v : problem.q, sh.batch, sk_map, sh.heads_kv, D, fp16, kBlockM);
  params.tm_o = make_map(problem.out, sh.batch, sh.seq_q, sh.heads_q, D, fp16, kBlockM / 2);
  params.out = problem.out;
  params.seq_q = static_cast<int>(sh.seq_q);
  params.seq_k = static_cast<int>(sh.seq_k);
  params.heads_q = static_cast<int>(sh.heads_q);
  params.group = static_cast<int>(sh.heads_q / sh.heads_kv);
  params.batch = static_cast<int>(sh.batch);
  const HopperTuning tuning = hopper_tuning();
  params.rescale_threshold = tuning.rescale_threshold;
  params.m_blocks = static_cast<int>((sh.seq_q + kBlockM - 1) / kBlockM);
  const std::int64_t total_tiles = std::int64_t(params.m_blocks) * sh.heads_q * sh.batch;
  if (total_tiles > 0x7fffffff) throw std::runtime_error("FLASH_ATTN (hopper): too many work tiles");
  params.total_tiles = static_cast<int>(total_tiles);
  params.scale_log2 = static_cast<float>(static_cast<double>(problem.softmax_scale()) * 1.4426950408889634);
  if (lists) {
    params.tile_entries = lists->entries;
    params.tile_counts = lists->counts;
    params.tile_stride = lists->stride;
  }

  int* lengths_dev = nullptr;
  if (!problem.key_lengths.empty()) {
    std::vector<int> lengths(problem.key_lengths.size());
    for (std::size_t b = 0; b < lengths.size(); ++b)
      lengths[b] = static_cast<int>(std::min<std::int64_t>(problem.key_lengths[b], sh.seq_k));
    if (sh.batch <= hopper::kInlineLengths) {
      params.lengths_mode = 1;
      for (std::size_t b = 0; b < lengths.size(); ++b) params.inline_lengths[b] = lengths[b];
    } else {
      params.lengths_mode = 2;
      const std::size_t bytes = lengths.size() * sizeof(int);
      DATTN_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&lengths_dev), bytes, stream));
      DATTN_CUDA_CHECK(cudaMemcpyAsync(lengths_dev, lengths.data(), bytes, cudaMemcpyHostToDevice, stream));
      params.key_lengths = lengths_dev;
    }
  }
  int device = 0;
  DATTN_CUDA_CHECK(cudaGetDevice(&device));
  const int sms = sm_count(device);
  const dim3 grid(static_cast<unsigned>(tuning.persistent_grid ? std::min<std::int64_t>(total_tiles, sms) : total_tiles));
  using hopper::KeyWalk;
  if (lists && sh.causal()) throw std::logic_error("FLASH_ATTN (hopper): a sparse walk cannot be causal");
  const KeyWalk walk = lists          ? (lists->hidden_halves ? KeyWalk::ListedHalves : KeyWalk::Listed)
                       : sh.causal() ? KeyWalk::DenseCausal
                                     : KeyWalk::Dense;
  const auto launch_walk = [&]<int kHeadDim>() {
    if (walk == KeyWalk::Dense) launch_dim<kHeadDim, KeyWalk::Dense>(params, grid, stream, fp16, tuning);
    if (walk == KeyWalk::DenseCausal) launch_dim<kHeadDim, KeyWalk::DenseCausal>(params, grid, stream, fp16, tuning);
    if (walk == KeyWalk::Listed) launch_dim<kHeadDim, KeyWalk::Listed>(params, grid, stream, fp16, tuning);
    if (walk == KeyWalk::ListedHalves) launch_dim<kHeadDim, KeyWalk::ListedHalves>(params, grid, stream, fp16, tuning);
  };
  if (D == 128)
    launch_walk.template operator()<128>();
  else
    launch_walk.template operator()<64>();
  if (lengths_dev) DATTN_CUDA_CHECK(cudaFreeAsync(lengths_dev, stream));
}

}  // namespace dattn::flash
