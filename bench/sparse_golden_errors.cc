#include "sparse_golden_errors.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "dattn/attention/backend.h"
#include "dattn/attention/metrics.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/dtype.h"
#include "dattn/io/safetensors.h"
#include "attention/backends/sparse_block/block_mask.h"

namespace dattn::bench {
namespace {

struct GoldenCase {
  const char* name;
  AttentionShape shape;
  std::vector<std::uint16_t> q, k, v;  // bf16 bits
  std::vector<double> exact;           // float64 attention of the bf16 inputs
};

std::vector<std::uint16_t> to_bf16(const std::vector<double>& x) {
  std::vector<float> f(x.begin(), x.end());
  std::vector<std::uint16_t> out(x.size());
  from_f32(f.data(), DType::BF16, out.data(), out.size());
  return out;
}

GoldenCase load(const SafetensorsFile& f, const char* name, const std::string& prefix) {
  GoldenCase c{name, {}, to_bf16(f.read_f64(prefix + ".q")), to_bf16(f.read_f64(prefix + ".k")),
               to_bf16(f.read_f64(prefix + ".v")), {}};
  const auto& qs = f.info(prefix + ".q").shape;
  const auto& ks = f.info(prefix + ".k").shape;
  c.shape = AttentionShape{qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], DType::BF16, MaskKind::None};
  std::vector<std::uint16_t> unused_out(c.q.size());  // the reference writes only its own output
  AttentionProblem p;
  p.shape = c.shape;
  p.q = c.q.data(), p.k = c.k.data(), p.v = c.v.data(), p.out = unused_out.data();
  attention_reference_f64(p, c.exact);
  return c;
}

// Runs `backend` with `extra` on CUDA and returns its error to the exact result.
ErrorStats error_of(const GoldenCase& c, const AttentionBackend& backend, const nlohmann::json& extra) {
  const std::size_t nq = c.q.size() * 2, nk = c.k.size() * 2;
  DeviceBuffer q(nq), k(nk), v(nk), out(nq);
  q.upload(c.q.data(), nq), k.upload(c.k.data(), nk), v.upload(c.v.data(), nk), out.fill(0xFF);
  AttentionProblem p;
  p.shape = c.shape;
  p.q = q.get(), p.k = k.get(), p.v = v.get(), p.out = out.get();
  run_attention(backend, p, extra_with_defaults(backend, extra), Device::CUDA);
  check_device(std::string(backend.name()).c_str());
  std::vector<std::uint16_t> got(c.q.size());
  out.download(got.data(), nq);
  std::vector<double> g(got.size());
  to_f64(got.data(), DType::BF16, g.data(), g.size());
  return compare(g.data(), c.exact.data(), g.size());
}

}  // namespace

nlohmann::ordered_json print_sparse_golden_errors(const std::string& golden_dir, const std::vector<double>& densities) {
  const SafetensorsFile f(golden_dir + "/wan_tiny/cases/transformer_t2v_scalar_t.safetensors");
  const GoldenCase cases[] = {load(f, "wan_tiny self", "blocks.0.attn_self"),
                              load(f, "wan_tiny cross", "blocks.0.attn_cross")};
  std::printf("\nSPARSE_BLOCK on the golden diffusers attention inputs (CUDA, bf16), error to exact attention:\n");
  std::printf("%-15s %-22s %-28s %6s %10s %10s %9s\n", "case", "B,H,Sq,Sk,D", "backend", "kept", "rel_l2", "rel_l1",
              "cosine");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  // `kept`: key blocks kept per query block ("" for dense). The tiny cases have 72 (self) and 12 (cross)
  // keys, so most densities keep the same blocks there and give the same error: the column says so.
  const auto row = [&](const GoldenCase& c, const std::string& label, const std::string& kept, const ErrorStats& e) {
    const auto& s = c.shape;
    const std::string dims = std::to_string(s.batch) + "," + std::to_string(s.heads_q) + "," + std::to_string(s.seq_q) +
                             "," + std::to_string(s.seq_k) + "," + std::to_string(s.head_dim);
    std::printf("%-15s %-22s %-28s %6s %10.2e %10.2e %9.6f\n", c.name, dims.c_str(), label.c_str(),
                kept.empty() ? "-" : kept.c_str(), e.rel_l2, e.rel_l1, e.cosine);
    rows.push_back({{"case", c.name}, {"backend", label}, {"key_blocks_kept", kept}, {"rel_l2", e.rel_l2},
                    {"rel_l1", e.rel_l1}, {"cosine", e.cosine}, {"nonfinite", e.nonfinite}});
  };
  const AttentionBackend& flash = backend_by_name("FLASH_ATTN");
  const AttentionBackend& sparse = backend_by_name("SPARSE_BLOCK");
  for (const GoldenCase& c : cases) {
    row(c, "FLASH_ATTN", "", error_of(c, flash, nlohmann::json::object()));
    for (const int bs : {64, 128})
      for (const double d : densities) {
        char label[64];
        std::snprintf(label, sizeof label, "SPARSE_BLOCK bs=%d d=%g", bs, d);
        const std::int64_t blocks = (c.shape.seq_k + bs - 1) / bs;
        const std::string kept =
            std::to_string(sparse::density_block_count(d, blocks)) + "/" + std::to_string(blocks);
        row(c, label, kept, error_of(c, sparse, {{"block_size", bs}, {"density", d}}));
      }
  }
  return rows;
}

}  // namespace dattn::bench
