// dattn_attention_bench: times dattn's attention backends on the anchor shapes of
// ../shared/anchors/README.md (the shapes torch_sdpa_bench.py measures) and prints one table.
// CUDA: bf16 inputs in device memory allocated once per shape, one CUDA-event pair per iteration
// (as the torch script does), median reported. CPU: the same on host memory with a steady clock.
// TFLOP/s = 4*B*H*Sq*Sk*D / time for every backend. Layout is dattn's BSHD.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "attention/kernels/flash/hopper/hopper_tuning.h"
#include "attention/backends/sage_attn/cuda_entry.h"
#include "attention/backends/sparse_block/cuda_entry.h"
#include "sparse_golden_errors.h"
#include "dattn/attention/backend.h"
#include "dattn/attention/metrics.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/dtype.h"
#include "dattn/core/error.h"
#include "dattn/models/attention_roles.h"

namespace dattn::bench {
namespace {

struct AnchorShape { const char* name; std::int64_t b, h, sq, sk, d; };
// The anchors README's shapes (torch_sdpa_bench.py names them differently; bench_table.py
// matches the two by dimensions), then one longer shape of dattn's own (no torch row).
constexpr AnchorShape kShapes[] = {
    {"wan22_5b_self", 1, 24, 11440, 11440, 128}, {"wan22_5b_cross", 1, 24, 11440, 512, 128},
    {"hv15_480p_self", 1, 16, 14040, 14040, 128}, {"wan21_14b_self", 1, 40, 75600, 75600, 128},
    {"flux_joint", 1, 24, 4608, 4608, 128},       {"hd64", 1, 32, 16384, 16384, 64},
    // HunyuanVideo-1.5's joint attention at 480x832 x 121 frames: 48360 video + 144 valid text tokens.
    {"hv15_121f_self", 1, 16, 48504, 48504, 128},
};
// Above this many scores (B*H*Sq*Sk) the float64 CPU reference is too slow; TORCH_SDPA on the
// benchmark's device is the reference instead.
constexpr double kMaxF64Scores = 5e8;
bool f64_reference_ok(const AttentionShape& s) { return double(s.batch) * s.heads_q * s.seq_q * s.seq_k <= kMaxF64Scores; }
// A set of buffers (q, k, v, out) smaller than this is replicated and the sets rotated, so that no
// iteration finds its inputs in L2 (H200: 50 MiB L2). The anchor shapes all exceed it.
constexpr std::size_t kColdBytes = 128ull << 20;

struct Options {
  std::string device = "cuda", backends = "all", shapes = "all", dtype = "auto", json, command;
  int warmup = 5, iters = 20;
  int rounds = 1;  // every row of a shape timed this many times in turn; the median is over all rounds
  double scale = 1;
  bool check = false;
  bool causal = false;  // every shape as causal self-attention (square shapes only; TFLOP/s counts half)
  unsigned seed = 1;
  std::string sparse_densities = "1,0.5,0.25,0.1";  // one SPARSE_BLOCK row per density
  int sparse_block_size = 128;
  std::string sparse_golden;  // golden data directory: also print SPARSE_BLOCK's errors on its inputs
  std::string kernel = "auto";  // the `kernel` extra of FLASH_ATTN and SAGE_ATTN rows
  flash::HopperTuning tuning;   // Hopper kernel comparison knobs (FLASH_ATTN, SPARSE_BLOCK)
};

std::string fmt(double v, const char* f) {
  char s[64];
  std::snprintf(s, sizeof s, f, v);
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Normal(0, 1) values, deterministic per (seed, index chunk), generated in parallel.
void fill_normal(std::vector<std::uint8_t>& bytes, std::size_t n, DType t, std::uint64_t seed) {
  bytes.resize(n * dtype_size(t));
  constexpr std::size_t kChunk = 1 << 16;
  const std::int64_t chunks = std::int64_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + std::uint64_t(c) * 0xD1B54A32D192ED03ull + 1;
    auto next = [&x] {  // splitmix64
      std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull, z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return z ^ (z >> 31);
    };
    const std::size_t begin = std::size_t(c) * kChunk, count = std::min(kChunk, n - begin);
    std::vector<float> f(count);
    for (std::size_t i = 0; i < count; i += 2) {  // Box-Muller
      const double u1 = (double(next() >> 11) + 1.0) * 0x1.0p-53, u2 = double(next() >> 11) * 0x1.0p-53;
      const double r = std::sqrt(-2.0 * std::log(u1)), a = 6.283185307179586 * u2;
      f[i] = float(r * std::cos(a));
      if (i + 1 < count) f[i + 1] = float(r * std::sin(a));
    }
    from_f32(f.data(), t, bytes.data() + begin * dtype_size(t), count);
  }
}

// Error of `got` (n values of dtype t) against a reference in float64.
ErrorStats compare_to(const std::vector<std::uint8_t>& got, DType t, const std::vector<double>& ref) {
  std::vector<double> a(ref.size());
  to_f64(got.data(), t, a.data(), a.size());
  return compare(a.data(), ref.data(), a.size());
}

struct Row {
  std::string shape, backend, dtype, status = "ok", ref;
  AttentionShape dims;
  std::vector<double> times;
  double median_ms = 0, tflops = 0;
  std::optional<ErrorStats> err;
  int sets = 1;
};

// One shape's inputs: `sets` copies of q, k, v, out on the device (CUDA) or one on the host (CPU).
struct Buffers {
  std::vector<std::uint8_t> hq, hk, hv, hout;
  std::vector<DeviceBuffer> dq, dk, dv, dout;
  int sets = 1;
  AttentionProblem problem(const AttentionShape& s, int set, Device device) {
    AttentionProblem p;
    p.shape = s;
    if (device == Device::CUDA) p.q = dq[set].get(), p.k = dk[set].get(), p.v = dv[set].get(), p.out = dout[set].get();
    else p.q = hq.data(), p.k = hk.data(), p.v = hv.data(), p.out = hout.data();
    return p;
  }
};

class Bench {
 public:
  Bench(Options o, Device device) : o_(std::move(o)), device_(device) {}

  int run() {
    std::vector<const AttentionBackend*> backends = chosen_backends();
    std::vector<AnchorShape> shapes = chosen_shapes();
    std::printf("dattn attention bench: device %s (%s), warmup %d, iters %d x %d round(s), median of per-iteration %s%s\n",
                std::string(device_name(device_)).c_str(),
                device_ == Device::CUDA ? cuda_device_summary().c_str() : "host", o_.warmup, o_.iters, o_.rounds,
                device_ == Device::CUDA ? "CUDA-event times" : "wall times",
                o_.scale != 1 ? (", Sq/Sk divided by " + fmt(o_.scale, "%g") + " (smoke run)").c_str() : "");
    std::printf("TFLOP/s = 4*B*H*Sq*Sk*D%s / median time%s\n\n", o_.causal ? " / 2 (causal)" : "",
                o_.check ? "; error vs float64 CPU reference (ref=f64) or TORCH_SDPA on the device" : "");
    header();
    int rc = 0;
    for (const AnchorShape& a : shapes) {
      // The shape's rows, timed in turn once per round: a drift of the GPU's clock over the run then
      // lands on every row alike instead of on whichever rows ran during it.
      std::vector<std::function<Row(bool first_round)>> jobs;
      for (const AttentionBackend* b : backends) {
        for (const auto& [label, extra] : extras_for(*b))
          jobs.push_back([this, &a, b, label, extra](bool first) { return run_shape_backend(a, *b, label, extra, first); });
        // The part rows (mask estimation, quantization) have no causal form: left out under --causal.
        if (b->name() == "SPARSE_BLOCK" && device_ == Device::CUDA && !o_.causal) {
          jobs.push_back([this, &a](bool) { return run_sparse_mask(a); });
          for (const std::string& d : split(o_.sparse_densities))
            jobs.push_back([this, &a, d](bool) { return run_sparse_kernel(a, d); });
        }
        if (b->name() == "SAGE_ATTN" && device_ == Device::CUDA && !o_.causal)
          jobs.push_back([this, &a](bool) { return run_sage_quant(a); });
      }
      std::vector<Row> shape_rows;
      for (int round = 0; round < o_.rounds; ++round) {
        for (std::size_t j = 0; j < jobs.size(); ++j) {
          Row r = jobs[j](round == 0);
          if (round == 0) {
            shape_rows.push_back(std::move(r));
          } else if (r.status != "ok") {
            shape_rows[j].status = r.status;
          } else {
            shape_rows[j].times.insert(shape_rows[j].times.end(), r.times.begin(), r.times.end());
          }
          if (round + 1 < o_.rounds) continue;
          // The row's last round: reported at once, so that a run cut short keeps the rows it finished.
          Row& done = shape_rows[j];
          if (done.status == "ok" && o_.rounds > 1) set_median(done);
          if (done.status.rfind("error", 0) == 0 || (done.err && done.err->nonfinite)) rc = 1;
          print(done);
          rows_.push_back(done);
          write_json();
        }
      }
      buf_.reset(), ref_.reset(), ref_note_.clear();
    }
    if (!o_.sparse_golden.empty()) {
      std::vector<double> densities;
      for (const std::string& d : split(o_.sparse_densities)) densities.push_back(std::stod(d));
      golden_rows_ = print_sparse_golden_errors(o_.sparse_golden, densities);
      write_json();
    }
    if (!o_.json.empty()) std::printf("\nwrote %s\n", o_.json.c_str());
    return rc;
  }

 private:
  // What "available" is decided for: the models layer's reference shape (Wan2.2-5B self-attention),
  // bf16 on CUDA and fp32 on the host, as `dattn backends` decides it.
  AttentionShape reference_shape() const {
    return reference_attention_shape(device_ == Device::CUDA ? DType::BF16 : DType::F32);
  }

  std::vector<const AttentionBackend*> chosen_backends() const {
    std::vector<const AttentionBackend*> out;
    if (o_.backends != "all" && o_.backends != "ALL") {
      for (const std::string& n : split(o_.backends)) out.push_back(&backend_by_name(n));
      return out;
    }
    std::string skipped;
    for (const AttentionBackend* b : registered_backends()) {
      if (Support s = backend_availability(*b, device_, reference_shape()); s.ok) out.push_back(b);
      else skipped += "  " + std::string(b->name()) + ": " + s.reason + "\n";
    }
    if (!skipped.empty()) std::fprintf(stderr, "not available on %s, not benchmarked:\n%s",
                                       std::string(device_name(device_)).c_str(), skipped.c_str());
    if (out.empty())
      throw UserError("no dattn backend is available on " + std::string(device_name(device_)) +
                      " (reasons above); name some with --backends to get one row each saying why");
    return out;
  }

  // The (row label, extra) pairs a backend is timed with: its defaults, or for SPARSE_BLOCK one row
  // "SPARSE_BLOCK d=<density>" per --sparse-densities value at --sparse-block-size.
  std::vector<std::pair<std::string, nlohmann::json>> extras_for(const AttentionBackend& b) const {
    if (b.name() != "SPARSE_BLOCK") {
      nlohmann::json given = nlohmann::json::object();
      for (const ExtraKey& k : b.extra_keys())
        if (k.name == "kernel") given["kernel"] = o_.kernel;
      validate_extra(b, given, "--kernel");
      return {{std::string(b.name()), extra_with_defaults(b, given)}};
    }
    std::vector<std::pair<std::string, nlohmann::json>> out;
    for (const std::string& d : split(o_.sparse_densities)) {
      const nlohmann::json given{{"density", std::stod(d)}, {"block_size", o_.sparse_block_size}};
      out.emplace_back("SPARSE_BLOCK d=" + d, extra_with_defaults(b, given));
    }
    return out;
  }

  std::vector<AnchorShape> chosen_shapes() const {
    std::vector<AnchorShape> out;
    if (o_.shapes == "all") {
      out.assign(std::begin(kShapes), std::end(kShapes));
    } else {
      for (const std::string& n : split(o_.shapes)) {
        auto it = std::find_if(std::begin(kShapes), std::end(kShapes), [&](const AnchorShape& a) { return n == a.name; });
        if (it == std::end(kShapes)) throw UserError("--shapes: unknown shape '" + n + "'; see --help for the names");
        out.push_back(*it);
      }
    }
    if (o_.causal) {  // causal attention needs Sq == Sk
      std::vector<AnchorShape> square;
      for (const AnchorShape& a : out)
        if (a.sq == a.sk) square.push_back(a);
        else std::printf("# --causal: %s left out (Sq != Sk)\n", a.name);
      out = square;
    }
    return out;
  }

  AttentionShape dims_of(const AnchorShape& a, DType t) const {
    AttentionShape s;
    s.batch = a.b, s.heads_q = s.heads_kv = a.h, s.head_dim = a.d, s.dtype = t;
    s.seq_q = std::max<std::int64_t>(1, std::llround(double(a.sq) / o_.scale));
    s.seq_k = std::max<std::int64_t>(1, std::llround(double(a.sk) / o_.scale));
    if (o_.causal) s.mask = MaskKind::Causal;
    return s;
  }

  DType dtype_for(const AttentionBackend& b) const {
    if (auto t = parse_dtype(o_.dtype)) return *t;
    if (o_.dtype != "auto") throw UserError("--dtype '" + o_.dtype + "': expected auto, bf16, fp16 or fp32");
    const auto dts = b.surface(device_).dtypes;
    const bool bf16 = dts.empty() || std::find(dts.begin(), dts.end(), DType::BF16) != dts.end();
    return bf16 ? DType::BF16 : dts.front();
  }

  // Allocates (once per shape and dtype) and fills the inputs.
  Buffers& buffers(const AttentionShape& s) {
    if (buf_ && buf_dims_.dtype == s.dtype) return *buf_;
    buf_.reset(), ref_.reset(), ref_note_.clear();
    buf_.emplace();
    const std::size_t nq = s.batch * s.seq_q * s.heads_q * s.head_dim, nk = s.batch * s.seq_k * s.heads_kv * s.head_dim;
    const std::size_t es = dtype_size(s.dtype);
    fill_normal(buf_->hq, nq, s.dtype, o_.seed * 3), fill_normal(buf_->hk, nk, s.dtype, o_.seed * 3 + 1);
    fill_normal(buf_->hv, nk, s.dtype, o_.seed * 3 + 2);
    if (device_ == Device::CPU) buf_->hout.assign(nq * es, 0xFF);  // NaN poison
    else {
      const std::size_t set_bytes = (2 * nq + 2 * nk) * es;
      buf_->sets = int(std::min<std::size_t>(64, (kColdBytes + set_bytes - 1) / set_bytes));
      for (int i = 0; i < buf_->sets; ++i) {
        buf_->dq.emplace_back(nq * es).upload(buf_->hq.data(), nq * es);
        buf_->dk.emplace_back(nk * es).upload(buf_->hk.data(), nk * es);
        buf_->dv.emplace_back(nk * es).upload(buf_->hv.data(), nk * es), buf_->dout.emplace_back(nq * es);
      }
      if (!(o_.check && f64_reference_ok(s))) buf_->hq = {}, buf_->hk = {}, buf_->hv = {};
    }
    buf_dims_ = s;
    return *buf_;
  }

  // Runs the backend once on set 0 and returns its output on the host.
  std::vector<std::uint8_t> output_once(const AttentionBackend& b, const AttentionShape& s,
                                        const nlohmann::json& extra) {
    Buffers& bf = buffers(s);
    AttentionProblem p = bf.problem(s, 0, device_);
    if (device_ == Device::CUDA) bf.dout[0].fill(0xFF);
    else std::fill(bf.hout.begin(), bf.hout.end(), 0xFF);
    run_attention(b, p, extra, device_);
    if (device_ == Device::CPU) return bf.hout;
    check_device(std::string(b.name()).c_str());
    std::vector<std::uint8_t> out(bf.dout[0].bytes());
    bf.dout[0].download(out.data(), out.size());
    return out;
  }

  // The backend's error against the shape's reference (computed once per shape); nullopt, with r.ref
  // saying why, when there is none.
  std::optional<ErrorStats> check(const AttentionBackend& b, const AttentionShape& s, const nlohmann::json& extra,
                                  Row& r) {
    const std::vector<std::uint8_t> got = output_once(b, s, extra);
    const AttentionBackend& sdpa = backend_by_name("TORCH_SDPA");
    const bool f64 = f64_reference_ok(s);
    if (!f64 && &b == &sdpa) return r.ref = "self (is the reference)", std::nullopt;
    if (!ref_ && ref_note_.empty()) {
      if (f64) {
        AttentionProblem p = buffers(s).problem(s, 0, Device::CPU);
        std::uint8_t unused_out[8];  // the reference writes only its own output
        p.out = unused_out;
        attention_reference_f64(p, ref_.emplace());
      } else if (Support sp = sdpa.supports(s, device_); !sp.ok) {
        ref_note_ = "none: TORCH_SDPA " + sp.reason;
      } else {
        const std::vector<std::uint8_t> out = output_once(sdpa, s, extra_with_defaults(sdpa, nlohmann::json::object()));
        std::vector<double>& ref = ref_.emplace(out.size() / dtype_size(s.dtype));
        to_f64(out.data(), s.dtype, ref.data(), ref.size());
      }
    }
    r.ref = ref_ ? (f64 ? "f64" : "TORCH_SDPA") : ref_note_;
    if (!ref_) return std::nullopt;
    return compare_to(got, s.dtype, *ref_);
  }

  // `with_check`: also compare the output with the reference (--check; once per row, not per round).
  Row run_shape_backend(const AnchorShape& a, const AttentionBackend& b, const std::string& label,
                        const nlohmann::json& extra, bool with_check) {
    Row r;
    r.shape = a.name, r.backend = label;
    r.dims = dims_of(a, dtype_for(b));
    r.dtype = std::string(dtype_name(r.dims.dtype));
    if (Support sp = b.supports(r.dims, device_); !sp.ok) return r.status = "unsupported: " + sp.reason, r;
    try {
      Buffers& bf = buffers(r.dims);
      r.sets = bf.sets;
      std::vector<AttentionProblem> ps;
      for (int i = 0; i < bf.sets; ++i) ps.push_back(bf.problem(r.dims, i, device_));
      ps[0].validate();
      // Timed calls go straight to run() (checked above): run_attention's host-side checks stay out.
      time_calls(r, [&](int i) { b.run(ps[i % bf.sets], extra, device_); });
      if (o_.check && with_check) r.err = check(b, r.dims, extra, r);
    } catch (const std::exception& e) {
      r.status = std::string("error: ") + e.what();
    }
    return r;
  }

  // Times o_.warmup untimed and o_.iters timed calls of call(i) (i counts all calls); fills r's times,
  // median and TFLOP/s.
  void time_calls(Row& r, const std::function<void(int)>& call) {
    for (int i = 0; i < o_.warmup; ++i) call(i);
    const bool cuda = device_ == Device::CUDA;
    std::optional<GpuTimer> timer;
    if (cuda) timer.emplace();
    for (int i = 0; i < o_.iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      if (cuda) timer->start();
      call(o_.warmup + i);
      if (cuda) timer->stop();
      r.times.push_back(cuda ? timer->elapsed_ms()
                             : std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (cuda) check_device(r.backend.c_str());
    set_median(r);
  }

  static void set_median(Row& r) {
    std::vector<double> sorted = r.times;
    std::sort(sorted.begin(), sorted.end());
    r.median_ms = sorted[sorted.size() / 2];  // upper median, as torch_sdpa_bench.py takes it
    r.tflops = r.dims.flops() / (r.median_ms * 1e9);
  }

  // A bf16 row "label" on one anchor shape that times call(problem of buffer set i); the TFLOP/s column
  // then means the attention's FLOPs over this call's time, so read the ms.
  Row timed_row(const AnchorShape& a, const std::string& label,
                const std::function<void(const std::vector<AttentionProblem>&, int)>& call) {
    Row r;
    r.shape = a.name, r.backend = label;
    r.dims = dims_of(a, DType::BF16);
    r.dtype = "bf16";
    try {
      Buffers& bf = buffers(r.dims);
      r.sets = bf.sets;
      std::vector<AttentionProblem> ps;
      for (int i = 0; i < bf.sets; ++i) ps.push_back(bf.problem(r.dims, i, device_));
      call(ps, -1);  // set-up (i = -1), untimed
      time_calls(r, [&](int i) { call(ps, i % bf.sets); });
    } catch (const std::exception& e) {
      r.status = std::string("error: ") + e.what();
    }
    return r;
  }

  // SAGE_ATTN's quantization pass alone (its share of the SAGE_ATTN time), as row "SAGE_QUANT".
  Row run_sage_quant(const AnchorShape& a) {
    return timed_row(a, "SAGE_QUANT", [](const std::vector<AttentionProblem>& ps, int i) {
      if (i >= 0) sage::sage_quantize_only_cuda_entry(ps[i]);
    });
  }

  sparse::BlockMaskOptions sparse_options(const std::string& density) const {
    sparse::BlockMaskOptions options;
    options.block_size = o_.sparse_block_size;
    options.density = std::stod(density);
    return options;
  }

  // SPARSE_BLOCK's mask estimation alone (pool, score, select on the GPU), as row "SPARSE_MASK"
  // (density --sparse-densities' first value; the selection sorts every row whatever the density).
  Row run_sparse_mask(const AnchorShape& a) {
    const sparse::BlockMaskOptions options = sparse_options(split(o_.sparse_densities).at(0));
    return timed_row(a, "SPARSE_MASK", [&](const std::vector<AttentionProblem>& ps, int i) {
      if (i >= 0) sparse::estimate_block_mask_only_cuda_entry(ps[i], options);
    });
  }

  // SPARSE_BLOCK's attention kernel alone on a mask estimated once before timing, as row
  // "SPARSE_ATTN d=<density>" (the SPARSE_BLOCK row is this plus the estimation).
  Row run_sparse_kernel(const AnchorShape& a, const std::string& density) {
    std::optional<sparse::HeldDeviceMask> mask;  // every buffer set holds the same values: one mask
    return timed_row(a, "SPARSE_ATTN d=" + density, [&](const std::vector<AttentionProblem>& ps, int i) {
      if (i < 0) mask.emplace(ps[0], sparse_options(density));
      else mask->attend(ps[i]);
    });
  }

  void header() const {
    std::printf("%-15s %-27s %-18s %-5s %10s %9s", "shape", "B,H,Sq,Sk,D", "backend", "dtype", "median_ms", "TFLOP/s");
    if (o_.check) std::printf(" %10s %10s %9s  %-10s", "rel_l2", "rel_l1", "cosine", "ref");
    std::printf("  status\n");
  }

  void print(const Row& r) const {
    const auto& d = r.dims;
    const std::string dims = std::to_string(d.batch) + "," + std::to_string(d.heads_q) + "," + std::to_string(d.seq_q) +
                             "," + std::to_string(d.seq_k) + "," + std::to_string(d.head_dim);
    const bool ok = r.status == "ok";
    std::printf("%-15s %-27s %-18s %-5s %10s %9s", r.shape.c_str(), dims.c_str(), r.backend.c_str(), r.dtype.c_str(),
                ok ? fmt(r.median_ms, "%.3f").c_str() : "-", ok ? fmt(r.tflops, r.tflops >= 10 ? "%.1f" : "%.3g").c_str() : "-");
    if (o_.check)
      std::printf(" %10s %10s %9s  %-10s", r.err ? fmt(r.err->rel_l2, "%.2e").c_str() : "-",
                  r.err ? fmt(r.err->rel_l1, "%.2e").c_str() : "-", r.err ? fmt(r.err->cosine, "%.6f").c_str() : "-",
                  ok ? r.ref.c_str() : "-");
    std::string status = r.status;
    if (r.err && r.err->nonfinite) status = "NON-FINITE x" + std::to_string(r.err->nonfinite);
    std::printf("  %s\n", status.c_str());
    std::fflush(stdout);
  }

  void write_json() const {
    if (o_.json.empty()) return;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const Row& r : rows_) {
      const auto& d = r.dims;
      nlohmann::ordered_json e{{"shape", r.shape}, {"B", d.batch}, {"H", d.heads_q}, {"Sq", d.seq_q},
                               {"Sk", d.seq_k}, {"D", d.head_dim}, {"backend", r.backend}, {"dtype", r.dtype},
                               {"status", r.status}};
      if (r.status == "ok")
        e.update({{"median_ms", r.median_ms}, {"tflops", r.tflops}, {"times_ms", r.times}, {"buffer_sets", r.sets}});
      if (r.err)
        e.update({{"rel_l2", r.err->rel_l2}, {"rel_l1", r.err->rel_l1}, {"max_abs", r.err->max_abs}, {"cosine", r.err->cosine},
                  {"nonfinite", r.err->nonfinite}});
      if (!r.ref.empty()) e["reference"] = r.ref;
      rows.push_back(e);
    }
    nlohmann::ordered_json doc{
        {"tool", "dattn_attention_bench"}, {"command", o_.command}, {"device", std::string(device_name(device_))},
        {"device_summary", device_ == Device::CUDA ? cuda_device_summary() : "host"}, {"warmup", o_.warmup},
        {"iters", o_.iters}, {"rounds", o_.rounds}, {"scale", o_.scale},
        {"sparse_block_size", o_.sparse_block_size}, {"flops", "4*B*H*Sq*Sk*D"}, {"rows", rows}};
    if (!golden_rows_.empty()) doc["sparse_golden_errors"] = golden_rows_;
    std::ofstream f(o_.json);
    if (!(f << doc.dump(1) << "\n")) throw UserError("--json: cannot write '" + o_.json + "'");
  }

  Options o_;
  Device device_;
  std::vector<Row> rows_;
  std::optional<Buffers> buf_;
  AttentionShape buf_dims_;
  std::optional<std::vector<double>> ref_;  // float64 reference or TORCH_SDPA's output, as doubles
  std::string ref_note_;                     // why there is no reference
  nlohmann::ordered_json golden_rows_;       // --sparse-golden
};

}  // namespace
}  // namespace dattn::bench

int main(int argc, char** argv) {
  using namespace dattn;
  bench::Options o;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  CLI::App app{"dattn_attention_bench: time dattn's attention backends on the anchor shapes "
               "(wan22_5b_self, wan22_5b_cross, hv15_480p_self, wan21_14b_self, flux_joint, hd64)"};
  app.add_option("--device", o.device, "cuda or cpu")->capture_default_str();
  app.add_option("--backends", o.backends, "NAME,NAME,... or all: every backend available on the device")->capture_default_str();
  app.add_option("--shapes", o.shapes, "NAME,NAME,... or all")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls per backend and shape")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--iters", o.iters, "timed calls; the median is reported")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--rounds", o.rounds,
                 "time each shape's rows this many times in turn (iters calls per row per round) and report the "
                 "median over all rounds, so that clock drift during the run does not favour some rows")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--json", o.json, "also write the results to FILE (rewritten after every row)")->type_name("FILE");
  app.add_flag("--check", o.check, "compare each output once against the float64 CPU reference (B*H*Sq*Sk <= 5e8), "
                                   "else TORCH_SDPA on the device; adds rel_l2 and cosine columns");
  app.add_flag("--causal", o.causal, "causal self-attention on the square shapes (TFLOP/s counts half the dense FLOPs)");
  app.add_option("--dtype", o.dtype, "auto (bf16 where the backend takes it), bf16, fp16 or fp32")->capture_default_str();
  app.add_option("--scale", o.scale, "SMOKE RUNS ONLY: divide Sq and Sk by F (numbers not comparable to the anchors)")
      ->capture_default_str()->check(CLI::Range(1.0, 1e9))->type_name("F");
  app.add_option("--seed", o.seed, "seed of the random normal inputs")->capture_default_str();
  app.add_option("--sparse-densities", o.sparse_densities, "SPARSE_BLOCK: one row per density (comma-separated)")
      ->capture_default_str();
  app.add_option("--sparse-block-size", o.sparse_block_size, "SPARSE_BLOCK: block_size of its rows (64 or 128)")
      ->capture_default_str();
  app.add_option("--sparse-golden", o.sparse_golden,
                 "DIR (tests/golden): also print SPARSE_BLOCK's error to exact attention per density and block "
                 "size on the golden diffusers attention inputs (CUDA)")->type_name("DIR");
  app.add_option("--kernel", o.kernel,
                 "FLASH_ATTN and SAGE_ATTN rows: their `kernel` extra (auto, hopper or portable)")
      ->capture_default_str();
  // Comparison knobs of the Hopper kernel (flash::HopperTuning); no user would set these.
  std::string pingpong = "on", grid = "persistent", pdl = "on", sage_pingpong = "off";
  app.add_option("--hopper-pingpong", pingpong, "FLASH_ATTN Hopper kernel: ping-pong consumer warpgroups (on, off)")
      ->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  app.add_option("--hopper-grid", grid, "FLASH_ATTN Hopper kernel: persistent (one CTA per SM) or tiles (one per work tile)")
      ->capture_default_str()->check(CLI::IsMember({"persistent", "tiles"}));
  app.add_option("--hopper-rescale-threshold", o.tuning.rescale_threshold,
                 "FLASH_ATTN Hopper kernel: log2 growth of a row max before the output is rescaled (0 to 15; 0: "
                 "on every growth)")
      ->capture_default_str()->check(CLI::Range(0.0, 15.0));
  app.add_option("--sparse-pdl", pdl, "SPARSE_BLOCK: launch its Hopper walk dependent on the mask's last kernel (on, off)")
      ->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  app.add_option("--sage-pingpong", sage_pingpong, "SAGE_ATTN Hopper kernel: ping-pong consumer warpgroups (on, off)")
      ->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  CLI11_PARSE(app, argc, argv);
  o.tuning.pingpong = pingpong == "on";
  o.tuning.sage_pingpong = sage_pingpong == "on";
  o.tuning.persistent_grid = grid == "persistent";
  o.tuning.sparse_dependent_launch = pdl == "on";
  try {
    flash::set_hopper_tuning(o.tuning);
    const auto device = parse_device(o.device);
    if (!device) throw UserError("--device '" + o.device + "': expected cuda or cpu");
    if (*device == Device::CUDA && !built_with_cuda())
      throw UserError("no CUDA: this dattn_attention_bench was built without CUDA (DATTN_CUDA=off or no nvcc); "
                      "use --device cpu, or build with -DDATTN_CUDA=on");
    if (*device == Device::CUDA && cuda_device_count() == 0)
      throw UserError("no CUDA device: " + cuda_device_summary() + "; run on the GPU machine or use --device cpu");
    return bench::Bench(o, *device).run();
  } catch (const UserError& e) {
    std::fprintf(stderr, "dattn_attention_bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dattn_attention_bench: internal error: %s\n", e.what());
    return 1;
  }
}
