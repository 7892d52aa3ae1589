// dattn_row_ops_bench: the memory-bound ops of a DiT block on CUDA at the models' full-size shapes, each
// against the device copy rate measured in the same run (a clone of the same bytes), and the FFN's first
// linear with and without its GELU fused into the GEMM. Bytes count reads plus writes.
//
//   build/bench/dattn_row_ops_bench [--tokens N] [--dim D] [--heads H] [--iters 50]
// Defaults: HunyuanVideo-1.5 at 480x832x33 (14040 video tokens, D = 2048, 16 heads).
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dattn/core/device_memory.h"
#include "dattn/core/tensor.h"
#include "dattn/ops/ops.h"

namespace dattn {
namespace {

Tensor random_device(const Shape& shape, DType dtype, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::from_f32(v, shape).to(dtype).to(Device::CUDA);
}

// Milliseconds per call: `iters` calls queued back to back after 3 warm-up calls.
double time_ms(const std::function<void()>& f, int iters) {
  for (int i = 0; i < 3; ++i) f();
  device_synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  device_synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
}

}  // namespace
}  // namespace dattn

int main(int argc, char** argv) {
  using namespace dattn;
  CLI::App app{"memory-bound DiT block ops on CUDA against the device copy rate"};
  std::int64_t tokens = 14040, dim = 2048, heads = 16;
  int iters = 50;
  app.add_option("--tokens", tokens, "rows (video tokens)");
  app.add_option("--dim", dim, "hidden size D");
  app.add_option("--heads", heads, "attention heads (the q/k norm's rows are D / heads long)");
  app.add_option("--iters", iters, "timed calls per op");
  CLI11_PARSE(app, argc, argv);
  try {
    const DType bf16 = DType::BF16;
    const Tensor x = random_device({1, tokens, dim}, bf16, 1, 2.0f), y = random_device({1, tokens, dim}, bf16, 2);
    const ops::TokenModulation mod{random_device({1, 6, dim}, DType::F32, 3, 0.5f), std::vector<std::int32_t>(tokens, 0)};
    const Tensor ffn_w = random_device({4 * dim, dim}, bf16, 4, 0.02f), ffn_b = random_device({4 * dim}, bf16, 5);
    const Tensor ffn_h = random_device({1, tokens, 4 * dim}, bf16, 6);
    const std::int64_t hd = dim / heads;
    const Tensor qk = x.reshape({1, tokens, heads, hd});
    const Tensor gain = random_device({hd}, bf16, 7);
    const Tensor cos = random_device({tokens, hd}, DType::F32, 8), sin = random_device({tokens, hd}, DType::F32, 9);
    // Wan's q/k norm runs across the heads (one row of D per token), then the rotary embedding per head.
    const Tensor qk_row = x.reshape({1, tokens, 1, dim});
    const Tensor gain_row = random_device({dim}, bf16, 10), bias_row = random_device({dim}, bf16, 11);
    const double row = static_cast<double>(tokens * dim * 2);  // bytes of one [tokens, D] bf16 tensor

    struct Row {
      std::string op;
      double ms, bytes;
    };
    std::vector<Row> rows;
    const auto run = [&](const std::string& op, double bytes, const std::function<void()>& f) {
      rows.push_back({op, time_ms(f, iters), bytes});
    };
    run("copy (clone)", 2 * row, [&] { (void)x.clone(); });
    run("layer_norm_modulated", 2 * row, [&] { (void)ops::layer_norm_modulated(x, 1e-6f, mod, 0, 1); });
    run("gated_residual", 3 * row, [&] { (void)ops::gated_residual(x, y, mod, 2); });
    run("residual_layer_norm_modulated", 4 * row,
        [&] { (void)ops::residual_layer_norm_modulated(x, y, &mod, 2, 1e-6f, mod, 3, 4); });
    run("rms_norm_rope_interleaved (per head)", 2 * row,
        [&] { (void)ops::rms_norm_rope_interleaved(qk, 1e-6f, gain, cos, sin); });
    run("rms_norm_rope_interleaved (across heads)", 2 * row,
        [&] { (void)ops::rms_norm_rope_interleaved(qk_row, 1e-6f, gain_row, cos, sin); });
    run("rms_norm (across heads)", 2 * row, [&] { (void)ops::rms_norm(x, 1e-6f, gain_row); });
    run("layer_norm (weight and bias)", 2 * row, [&] { (void)ops::layer_norm(x, 1e-6f, gain_row, bias_row); });
    // Wan's norm2 after the self-attention's gated residual: the two ops, then the fused one.
    run("gated_residual, then layer_norm (weight and bias)", 5 * row,
        [&] { (void)ops::layer_norm(ops::gated_residual(x, y, mod, 2), 1e-6f, gain_row, bias_row); });
    run("residual_layer_norm (weight and bias)", 4 * row,
        [&] { (void)ops::residual_layer_norm(x, y, &mod, 2, 1e-6f, gain_row, bias_row); });
    run("gelu_tanh [tokens, 4D]", 8 * row, [&] { (void)ops::gelu_tanh(ffn_h); });
    const double gemm_flop = 2.0 * static_cast<double>(tokens) * dim * 4 * dim;
    const double linear_ms = time_ms([&] { (void)ops::linear(x, ffn_w, ffn_b); }, iters);
    const double split_ms = time_ms([&] { (void)ops::gelu_tanh(ops::linear(x, ffn_w, ffn_b)); }, iters);
    const double fused_ms = time_ms([&] { (void)ops::linear_gelu_tanh(x, ffn_w, ffn_b); }, iters);

    const double copy_rate = rows[0].bytes / rows[0].ms / 1e9;  // TB/s
    std::printf("# Row ops on CUDA: %lld tokens x D = %lld (bf16), %lld heads, %d calls each\n\n",
                static_cast<long long>(tokens), static_cast<long long>(dim), static_cast<long long>(heads), iters);
    std::printf("| op | ms | MB moved | TB/s | of copy rate |\n|---|--:|--:|--:|--:|\n");
    for (const Row& r : rows)
      std::printf("| %s | %.4f | %.1f | %.2f | %.0f%% |\n", r.op.c_str(), r.ms, r.bytes / 1e6, r.bytes / r.ms / 1e9,
                  100.0 * r.bytes / r.ms / 1e9 / copy_rate);
    std::printf("\n| FFN first linear [%lld x %lld] x [%lld x %lld]^T | ms | TFLOP/s |\n|---|--:|--:|\n",
                static_cast<long long>(tokens), static_cast<long long>(dim), static_cast<long long>(4 * dim),
                static_cast<long long>(dim));
    std::printf("| linear (bias epilogue) | %.4f | %.0f |\n", linear_ms, gemm_flop / linear_ms / 1e9);
    std::printf("| linear, then gelu_tanh | %.4f | %.0f |\n", split_ms, gemm_flop / split_ms / 1e9);
    std::printf("| linear_gelu_tanh (GELU epilogue) | %.4f | %.0f |\n", fused_ms, gemm_flop / fused_ms / 1e9);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dattn_row_ops_bench: %s\n", e.what());
    return 1;
  }
}
