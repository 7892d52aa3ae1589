// RunContext on CUDA (skipped without a GPU): two contexts on device 0 each run on a stream of their
// own, count the memory allocated under them, and give the ops the results the default context gives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dattn/attention/backend.h"
#include "dattn/attention/registry.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/run_context.h"
#include "dattn/core/stage_timer.h"
#include "dattn/core/tensor.h"
#include "dattn/ops/activation.h"
#include "dattn/ops/elementwise.h"
#include "dattn/ops/linear.h"
#include "dattn/ops/modulation.h"
#include "dattn/ops/norm.h"
#include "support/device_case.h"

namespace dattn {
namespace {

Tensor random_host(const Shape& shape, DType dtype, std::mt19937_64& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (float& x : v) x = n(rng);
  return Tensor::from_f32(v, shape, dtype);
}

struct Inputs {
  Tensor x, w, b, params, q, k, v;
  std::vector<std::int32_t> rows;  // alternating rows: more runs than the kernels' inline table
};

Inputs make_inputs() {
  std::mt19937_64 rng(7);
  Inputs in;
  in.x = random_host({64, 96}, DType::BF16, rng);
  in.w = random_host({80, 96}, DType::BF16, rng);
  in.b = random_host({80}, DType::BF16, rng);
  in.params = random_host({2, 6, 96}, DType::F32, rng);
  for (int t = 0; t < 64; ++t) in.rows.push_back(t % 2);
  in.q = random_host({1, 256, 2, 64}, DType::BF16, rng);
  in.k = random_host({1, 256, 2, 64}, DType::BF16, rng);
  in.v = random_host({1, 256, 2, 64}, DType::BF16, rng);
  return in;
}

struct Outputs {
  std::vector<float> linear, rms, silu, add, modulated, attention;
};

// Every op on the current context, results copied to the host. The inputs are uploaded here, so they
// belong to the current context too.
Outputs run_ops(const Inputs& in) {
  const Tensor x = in.x.to(Device::CUDA), w = in.w.to(Device::CUDA), b = in.b.to(Device::CUDA);
  Outputs out;
  out.linear = ops::linear(x, w, b).to_f32_vector();
  out.rms = ops::rms_norm(x, 1e-6f).to_f32_vector();
  out.silu = ops::silu(x).to_f32_vector();
  out.add = ops::add(x, ops::silu(x)).to_f32_vector();
  const ops::TokenModulation m{in.params.to(Device::CUDA), in.rows};
  out.modulated = ops::layer_norm_modulated(x, 1e-6f, m, 0, 1).to_f32_vector();

  const Tensor q = in.q.to(Device::CUDA), k = in.k.to(Device::CUDA), v = in.v.to(Device::CUDA);
  Tensor o = Tensor::empty(q.shape(), DType::BF16, Device::CUDA);
  AttentionProblem p;
  p.shape.batch = 1;
  p.shape.seq_q = p.shape.seq_k = 256;
  p.shape.heads_q = p.shape.heads_kv = 2;
  p.shape.head_dim = 64;
  p.shape.dtype = DType::BF16;
  p.q = q.data(), p.k = k.data(), p.v = v.data(), p.out = o.data();  // stream left null: the current one
  const AttentionBackend& flash = backend_by_name("FLASH_ATTN");
  run_attention(flash, p, extra_with_defaults(flash, nlohmann::json::object()), Device::CUDA);
  out.attention = o.to_f32_vector();
  check_device("ops under a run context");
  return out;
}

void expect_same(const Outputs& got, const Outputs& want) {
  EXPECT_EQ(got.rms, want.rms);
  EXPECT_EQ(got.silu, want.silu);
  EXPECT_EQ(got.add, want.add);
  EXPECT_EQ(got.modulated, want.modulated);
  EXPECT_EQ(got.attention, want.attention);
  ASSERT_EQ(got.linear.size(), want.linear.size());
  double worst = 0;  // cuBLASLt plans are per context; the same heuristic gives the same algorithm
  for (std::size_t i = 0; i < got.linear.size(); ++i) worst = std::max(worst, double(std::fabs(got.linear[i] - want.linear[i])));
  EXPECT_LE(worst, 1e-2) << "linear differs from the default context's";
}

TEST(RunContextCuda, ContextsHaveStreamsOfTheirOwnOnTheirDevice) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto a = RunContext::create(Device::CUDA, 0);
  const auto b = RunContext::create(Device::CUDA, 0);
  RunContext& d = default_context(Device::CUDA);
  EXPECT_EQ(&current_context(Device::CUDA), &d);
  EXPECT_EQ(a->device_index(), 0);
  EXPECT_NE(a->stream(), nullptr);
  EXPECT_NE(b->stream(), nullptr);
  EXPECT_NE(d.stream(), nullptr) << "the default context has its own stream too, not the legacy one";
  EXPECT_NE(a->stream(), b->stream());
  EXPECT_NE(a->stream(), d.stream());
  {
    const ContextScope s(*a);
    EXPECT_EQ(&current_context(Device::CUDA), a.get());
    EXPECT_EQ(&current_context(Device::CPU), &default_context(Device::CPU)) << "a CUDA scope binds no CPU context";
    a->synchronize();
  }
  EXPECT_EQ(&current_context(Device::CUDA), &d);
}

TEST(RunContextCuda, MemoryIsCountedInTheContextItWasAllocatedUnder) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto a = RunContext::create(Device::CUDA, 0);
  const auto b = RunContext::create(Device::CUDA, 0);
  const std::size_t device_start = device_bytes_in_use();
  constexpr std::size_t kA = std::size_t{1} << 20, kB = 3 * (std::size_t{1} << 20);
  {
    Tensor ta, tb;
    {
      const ContextScope s(*a);
      ta = Tensor::zeros({static_cast<std::int64_t>(kA)}, DType::I8, Device::CUDA);
    }
    {
      const ContextScope s(*b);
      tb = Tensor::empty({static_cast<std::int64_t>(kB)}, DType::I8, Device::CUDA);
      DeviceBuffer extra(kA);
      EXPECT_EQ(b->bytes_in_use(), kB + kA);
      EXPECT_EQ(extra.stream(), b->stream());
    }
    EXPECT_EQ(a->bytes_in_use(), kA);
    EXPECT_EQ(b->bytes_in_use(), kB);
    EXPECT_EQ(b->bytes_peak(), kB + kA);
    EXPECT_EQ(device_bytes_in_use(), device_start + kA + kB) << "the device counts every context on it";
    // Read outside a's scope: the copy waits for a's stream (the memset queued there) first.
    const std::vector<float> zeros = ta.to_f32_vector();
    EXPECT_EQ(zeros, std::vector<float>(kA, 0.0f));
  }
  EXPECT_EQ(a->bytes_in_use(), 0u);
  EXPECT_EQ(b->bytes_in_use(), 0u);
  EXPECT_EQ(device_bytes_in_use(), device_start);
  b->reset_peak();
  EXPECT_EQ(b->bytes_peak(), 0u);
}

TEST(RunContextCuda, OpsGiveTheDefaultContextsResultsUnderEachContext) {
  DATTN_SKIP_WITHOUT_CUDA();
  const Inputs in = make_inputs();
  const Outputs want = run_ops(in);
  const auto a = RunContext::create(Device::CUDA, 0);
  const auto b = RunContext::create(Device::CUDA, 0);
  for (RunContext* c : {a.get(), b.get(), a.get()}) {
    const ContextScope s(*c);
    SCOPED_TRACE(c == a.get() ? "context a" : "context b");
    expect_same(run_ops(in), want);
  }
  EXPECT_EQ(a->bytes_in_use(), 0u) << "every tensor of the ops was released";
  EXPECT_EQ(b->bytes_in_use(), 0u);
}

TEST(RunContextCuda, ATensorKeepsItsContextAlive) {
  DATTN_SKIP_WITHOUT_CUDA();
  Tensor t;
  {
    const auto c = RunContext::create(Device::CUDA, 0);
    const ContextScope s(*c);
    t = ops::silu(Tensor::from_f32({-1.0f, 0.0f, 2.0f}, {3}).to(Device::CUDA));
  }  // the context's last owner outside is gone; the tensor still holds it (and its stream)
  const std::vector<float> v = t.to_f32_vector();
  EXPECT_FLOAT_EQ(v[1], 0.0f);
  EXPECT_NEAR(v[2], 2.0f / (1.0f + std::exp(-2.0f)), 1e-6f);
  t = Tensor();  // frees on the context's stream, then the context goes
}

TEST(RunContextCuda, StageTimerRecordsOnTheCurrentContextsStream) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto c = RunContext::create(Device::CUDA, 0);
  const Tensor x = Tensor::from_f32(std::vector<float>(1 << 16, 1.0f), {256, 256}).to(Device::CUDA);
  StageTimer::enable(Device::CUDA);
  {
    const ContextScope s(*c);
    const StageScope stage("gemm");
    const Tensor y = ops::linear(x, x, Tensor());
  }
  const auto t = StageTimer::collect();
  StageTimer::disable();
  ASSERT_EQ(t.count("gemm"), 1u);
  EXPECT_GT(t.at("gemm"), 0.0);
}

}  // namespace
}  // namespace dattn
