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
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "dattn/attention/backend.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/dtype.h"
#include "dattn/core/error.h"

namespace dattn::bench {
namespace {

struct AnchorShape {
  const char* name;
  std::int64_t b, h, sq, sk, d;
};
// Exactly the anchors README's shapes (torch_sdpa_bench.py names them differently; bench_table.py
// matches the two by dimensions).
constexpr AnchorShape kShapes[] = {
    {"wan22_5b_self", 1, 24, 11440, 11440, 128}, {"wan22_5b_cross", 1, 24, 11440, 512, 128},
    {"hv15_480p_self", 1, 16, 14040, 14040, 128}, {"wan21_14b_self", 1, 40, 75600, 75600, 128},
    {"flux_joint", 1, 24, 4608, 4608, 128},       {"hd64", 1, 32, 16384, 16384, 64},
};
// Above this many scores (B*H*Sq*Sk) the float64 CPU reference is too slow; TORCH_SDPA on the
// benchmark's device is the reference instead.
constexpr double kMaxF64Scores = 5e8;
// A set of buffers (q, k, v, out) smaller than this is replicated and the sets rotated, so that no
// iteration finds its inputs in L2 (H200: 50 MiB L2). The anchor shapes all exceed it.
constexpr std::size_t kColdBytes = 128ull << 20;

struct Options {
  std::string device = "cuda", backends = "all", shapes = "all", dtype = "auto", json, command;
  int warmup = 5, iters = 20;
  double scale = 1;
  bool check = false;
  std::uint64_t seed = 1;
};

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
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
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

// Error of `got` (dtype t) against a reference given as doubles or as a buffer of dtype t.
struct ErrorAcc {
  double diff2 = 0, ref2 = 0, got2 = 0, dot = 0;
  std::size_t nonfinite = 0;
  double rel_l2() const { return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2); }
  double cosine() const { return got2 > 0 && ref2 > 0 ? dot / std::sqrt(got2 * ref2) : 1.0; }
};
ErrorAcc compare_out(const std::vector<std::uint8_t>& got, DType t, const std::vector<double>* ref64,
                     const std::vector<std::uint8_t>* ref_same_dtype, std::size_t n) {
  constexpr std::size_t kChunk = 1 << 16;
  const std::int64_t chunks = std::int64_t((n + kChunk - 1) / kChunk);
  double diff2 = 0, ref2 = 0, got2 = 0, dot = 0;
  std::size_t nonfinite = 0;
#pragma omp parallel for schedule(static) reduction(+ : diff2, ref2, got2, dot, nonfinite)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t begin = std::size_t(c) * kChunk, count = std::min(kChunk, n - begin);
    std::vector<double> a(count), b(count);
    to_f64(got.data() + begin * dtype_size(t), t, a.data(), count);
    if (ref64) std::copy_n(ref64->data() + begin, count, b.data());
    else to_f64(ref_same_dtype->data() + begin * dtype_size(t), t, b.data(), count);
    for (std::size_t i = 0; i < count; ++i) {
      if (!std::isfinite(a[i])) { ++nonfinite; continue; }
      diff2 += (a[i] - b[i]) * (a[i] - b[i]), ref2 += b[i] * b[i], got2 += a[i] * a[i], dot += a[i] * b[i];
    }
  }
  return {diff2, ref2, got2, dot, nonfinite};
}

struct Row {
  std::string shape, backend, dtype, status = "ok", ref;
  AttentionShape dims;
  std::vector<double> times;
  double median_ms = 0, tflops = 0;
  std::optional<ErrorAcc> err;
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
    if (device == Device::CUDA) {
      p.q = dq[set].get(), p.k = dk[set].get(), p.v = dv[set].get(), p.out = dout[set].get();
    } else {
      p.q = hq.data(), p.k = hk.data(), p.v = hv.data(), p.out = hout.data();
    }
    return p;
  }
};

class Bench {
 public:
  Bench(Options o, Device device) : o_(std::move(o)), device_(device) {}

  int run() {
    std::vector<const AttentionBackend*> backends = chosen_backends();
    std::vector<AnchorShape> shapes = chosen_shapes();
    std::printf("dattn attention bench: device %s (%s), warmup %d, iters %d, median of per-iteration %s%s\n",
                std::string(device_name(device_)).c_str(),
                device_ == Device::CUDA ? cuda_device_summary().c_str() : "host", o_.warmup, o_.iters,
                device_ == Device::CUDA ? "CUDA-event times" : "wall times",
                o_.scale != 1 ? (", Sq/Sk divided by " + fmt(o_.scale, "%g") + " (smoke run)").c_str() : "");
    std::printf("TFLOP/s = 4*B*H*Sq*Sk*D / median time%s\n\n",
                o_.check ? "; error vs float64 CPU reference (ref=f64) or TORCH_SDPA on the device" : "");
    header();
    int rc = 0;
    for (const AnchorShape& a : shapes) {
      for (const AttentionBackend* b : backends) {
        Row r = run_shape_backend(a, *b);
        if (r.status.rfind("error", 0) == 0 || (r.err && r.err->nonfinite)) rc = 1;
        print(r);
        rows_.push_back(std::move(r));
        write_json();
      }
      buf_.reset(), ref64_.reset(), ref_out_.reset(), ref_note_.clear();
    }
    if (!o_.json.empty()) std::printf("\nwrote %s\n", o_.json.c_str());
    return rc;
  }

 private:
  static std::string fmt(double v, const char* f) {
    char s[64];
    std::snprintf(s, sizeof s, f, v);
    return s;
  }

  std::vector<const AttentionBackend*> chosen_backends() const {
    std::vector<const AttentionBackend*> out;
    if (o_.backends != "all" && o_.backends != "ALL") {
      for (const std::string& n : split(o_.backends)) out.push_back(&backend_by_name(n));
      return out;
    }
    std::string skipped;
    for (const AttentionBackend* b : registered_backends()) {
      if (Support s = backend_availability(*b, device_); s.ok) out.push_back(b);
      else skipped += "  " + std::string(b->name()) + ": " + s.reason + "\n";
    }
    if (!skipped.empty()) std::fprintf(stderr, "not available on %s, not benchmarked:\n%s",
                                       std::string(device_name(device_)).c_str(), skipped.c_str());
    if (out.empty())
      throw UserError("no dattn backend is available on " + std::string(device_name(device_)) +
                      " (reasons above); name some with --backends to get one row each saying why");
    return out;
  }

  std::vector<AnchorShape> chosen_shapes() const {
    std::vector<AnchorShape> out;
    if (o_.shapes == "all") return {std::begin(kShapes), std::end(kShapes)};
    for (const std::string& n : split(o_.shapes)) {
      auto it = std::find_if(std::begin(kShapes), std::end(kShapes), [&](const AnchorShape& a) { return n == a.name; });
      if (it == std::end(kShapes)) {
        std::string names;
        for (const AnchorShape& a : kShapes) names += (names.empty() ? "" : ", ") + std::string(a.name);
        throw UserError("--shapes: unknown shape '" + n + "'; known: " + names);
      }
      out.push_back(*it);
    }
    return out;
  }

  AttentionShape dims_of(const AnchorShape& a, DType t) const {
    AttentionShape s;
    s.batch = a.b, s.heads_q = s.heads_kv = a.h, s.head_dim = a.d, s.dtype = t;
    s.seq_q = std::max<std::int64_t>(1, std::llround(double(a.sq) / o_.scale));
    s.seq_k = std::max<std::int64_t>(1, std::llround(double(a.sk) / o_.scale));
    return s;
  }

  DType dtype_for(const AttentionBackend& b) const {
    if (o_.dtype != "auto") {
      auto t = parse_dtype(o_.dtype);
      if (!t) throw UserError("--dtype '" + o_.dtype + "': expected auto, bf16, fp16 or fp32");
      return *t;
    }
    const auto dts = b.surface(device_).dtypes;
    if (std::find(dts.begin(), dts.end(), DType::BF16) != dts.end() || dts.empty()) return DType::BF16;
    return dts.front();
  }

  // Allocates (once per shape and dtype) and fills the inputs.
  Buffers& buffers(const AttentionShape& s) {
    if (buf_ && buf_dims_.dtype == s.dtype) return *buf_;
    buf_.reset(), ref64_.reset(), ref_out_.reset(), ref_note_.clear();
    buf_.emplace();
    const std::size_t nq = s.batch * s.seq_q * s.heads_q * s.head_dim, nk = s.batch * s.seq_k * s.heads_kv * s.head_dim;
    const std::size_t es = dtype_size(s.dtype);
    fill_normal(buf_->hq, nq, s.dtype, o_.seed * 3 + 0);
    fill_normal(buf_->hk, nk, s.dtype, o_.seed * 3 + 1);
    fill_normal(buf_->hv, nk, s.dtype, o_.seed * 3 + 2);
    if (device_ == Device::CPU) buf_->hout.assign(nq * es, 0xFF);  // NaN poison
    if (device_ == Device::CUDA) {
      const std::size_t set_bytes = (2 * nq + 2 * nk) * es;
      buf_->sets = int(std::min<std::size_t>(64, (kColdBytes + set_bytes - 1) / set_bytes));
      for (int i = 0; i < buf_->sets; ++i) {
        buf_->dq.emplace_back(nq * es), buf_->dk.emplace_back(nk * es), buf_->dv.emplace_back(nk * es);
        buf_->dout.emplace_back(nq * es);
        buf_->dq.back().upload(buf_->hq.data(), nq * es), buf_->dk.back().upload(buf_->hk.data(), nk * es);
        buf_->dv.back().upload(buf_->hv.data(), nk * es);
      }
      if (!(o_.check && f64_reference_ok(s))) buf_->hq = {}, buf_->hk = {}, buf_->hv = {};
    }
    buf_dims_ = s;
    return *buf_;
  }

  static bool f64_reference_ok(const AttentionShape& s) {
    return double(s.batch) * s.heads_q * s.seq_q * s.seq_k <= kMaxF64Scores;
  }

  // Runs the backend once on set 0 and returns its output on the host.
  std::vector<std::uint8_t> output_once(const AttentionBackend& b, const AttentionShape& s) {
    Buffers& bf = buffers(s);
    AttentionProblem p = bf.problem(s, 0, device_);
    const std::size_t bytes = std::size_t(s.batch * s.seq_q * s.heads_q * s.head_dim) * dtype_size(s.dtype);
    if (device_ == Device::CUDA) bf.dout[0].fill(0xFF);
    else std::fill(bf.hout.begin(), bf.hout.end(), 0xFF);
    run_attention(b, p, extra_with_defaults(b, nlohmann::json::object()), device_);
    if (device_ == Device::CPU) return bf.hout;
    check_device(std::string(b.name()).c_str());
    std::vector<std::uint8_t> out(bytes);
    bf.dout[0].download(out.data(), bytes);
    return out;
  }

  // The error of `got` against the shape's reference, computed once per shape; nullopt with r.ref
  // saying why when there is none.
  std::optional<ErrorAcc> check(const AttentionBackend& b, const AttentionShape& s, Row& r) {
    const std::vector<std::uint8_t> got = output_once(b, s);
    const std::size_t n = std::size_t(s.batch * s.seq_q * s.heads_q * s.head_dim);
    if (f64_reference_ok(s)) {
      r.ref = "f64";
      if (!ref64_) {
        AttentionProblem p = buffers(s).problem(s, 0, Device::CPU);
        std::uint8_t unused_out[8];  // the reference writes only out64
        p.out = unused_out;
        ref64_.emplace();
        attention_reference_f64(p, *ref64_);
      }
      return compare_out(got, s.dtype, &*ref64_, nullptr, n);
    }
    const AttentionBackend& ref_b = backend_by_name("TORCH_SDPA");
    r.ref = "TORCH_SDPA";
    if (&b == &ref_b) {
      r.ref = "self (is the reference)";
      return std::nullopt;
    }
    if (!ref_out_ && ref_note_.empty()) {
      if (Support sp = ref_b.supports(s, device_); !sp.ok) ref_note_ = "none: TORCH_SDPA " + sp.reason;
      else ref_out_ = output_once(ref_b, s);
    }
    if (!ref_out_) {
      r.ref = ref_note_;
      return std::nullopt;
    }
    return compare_out(got, s.dtype, nullptr, &*ref_out_, n);
  }

  Row run_shape_backend(const AnchorShape& a, const AttentionBackend& b) {
    Row r;
    r.shape = a.name, r.backend = std::string(b.name());
    r.dims = dims_of(a, dtype_for(b));
    r.dtype = std::string(dtype_name(r.dims.dtype));
    if (Support sp = b.supports(r.dims, device_); !sp.ok) {
      r.status = "unsupported: " + sp.reason;
      return r;
    }
    try {
      Buffers& bf = buffers(r.dims);
      r.sets = bf.sets;
      const nlohmann::json extra = extra_with_defaults(b, nlohmann::json::object());
      std::vector<AttentionProblem> ps;
      for (int i = 0; i < bf.sets; ++i) ps.push_back(bf.problem(r.dims, i, device_));
      ps[0].validate();
      // Timed calls go straight to run() (checked above): run_attention's host-side checks stay out.
      for (int i = 0; i < o_.warmup; ++i) b.run(ps[i % bf.sets], extra, device_);
      if (device_ == Device::CUDA) {
        check_device((r.backend + " warm-up").c_str());
        GpuTimer timer;
        for (int i = 0; i < o_.iters; ++i) {
          timer.start();
          b.run(ps[(o_.warmup + i) % bf.sets], extra, device_);
          timer.stop();
          r.times.push_back(timer.elapsed_ms());
        }
        check_device(r.backend.c_str());
      } else {
        for (int i = 0; i < o_.iters; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          b.run(ps[0], extra, device_);
          r.times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
      }
      std::vector<double> sorted = r.times;
      std::sort(sorted.begin(), sorted.end());
      r.median_ms = sorted[sorted.size() / 2];  // upper median, as torch_sdpa_bench.py takes it
      r.tflops = r.dims.flops() / (r.median_ms * 1e9);
      if (o_.check) r.err = check(b, r.dims, r);
    } catch (const std::exception& e) {
      r.status = std::string("error: ") + e.what();
    }
    return r;
  }

  void header() const {
    std::printf("%-15s %-27s %-12s %-5s %10s %9s", "shape", "B,H,Sq,Sk,D", "backend", "dtype", "median_ms", "TFLOP/s");
    if (o_.check) std::printf(" %10s %9s  %-10s", "rel_l2", "cosine", "ref");
    std::printf("  status\n");
  }

  void print(const Row& r) const {
    const auto& d = r.dims;
    char dims[64];
    std::snprintf(dims, sizeof dims, "%lld,%lld,%lld,%lld,%lld", (long long)d.batch, (long long)d.heads_q,
                  (long long)d.seq_q, (long long)d.seq_k, (long long)d.head_dim);
    const bool ok = r.status == "ok";
    std::printf("%-15s %-27s %-12s %-5s %10s %9s", r.shape.c_str(), dims, r.backend.c_str(), r.dtype.c_str(),
                ok ? fmt(r.median_ms, "%.3f").c_str() : "-", ok ? fmt(r.tflops, r.tflops >= 10 ? "%.1f" : "%.3g").c_str() : "-");
    if (o_.check)
      std::printf(" %10s %9s  %-10s", r.err ? fmt(r.err->rel_l2(), "%.2e").c_str() : "-",
                  r.err ? fmt(r.err->cosine(), "%.6f").c_str() : "-", ok ? r.ref.c_str() : "-");
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
      if (r.err) e.update({{"rel_l2", r.err->rel_l2()}, {"cosine", r.err->cosine()}, {"nonfinite", r.err->nonfinite}});
      if (!r.ref.empty()) e["reference"] = r.ref;
      rows.push_back(e);
    }
    nlohmann::ordered_json doc{{"tool", "dattn_attention_bench"}, {"command", o_.command},
                               {"device", std::string(device_name(device_))},
                               {"device_summary", device_ == Device::CUDA ? cuda_device_summary() : "host"},
                               {"warmup", o_.warmup}, {"iters", o_.iters}, {"scale", o_.scale},
                               {"flops", "4*B*H*Sq*Sk*D"}, {"rows", rows}};
    std::ofstream f(o_.json);
    if (!(f << doc.dump(1) << "\n")) throw UserError("--json: cannot write '" + o_.json + "'");
  }

  Options o_;
  Device device_;
  std::vector<Row> rows_;
  std::optional<Buffers> buf_;
  AttentionShape buf_dims_;
  std::optional<std::vector<double>> ref64_;
  std::optional<std::vector<std::uint8_t>> ref_out_;
  std::string ref_note_;
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
  app.add_option("--backends", o.backends, "NAME,NAME,... or all (default: every backend available on the device)")
      ->capture_default_str();
  app.add_option("--shapes", o.shapes, "NAME,NAME,... or all")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls per backend and shape")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--iters", o.iters, "timed calls; the median is reported")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--json", o.json, "also write the results to FILE (rewritten after every row)")->type_name("FILE");
  app.add_flag("--check", o.check,
               "compare each backend's output once against the float64 CPU reference (B*H*Sq*Sk <= 5e8) or "
               "else TORCH_SDPA on the same device; adds rel_l2 and cosine columns");
  app.add_option("--dtype", o.dtype, "auto (bf16 where the backend takes it), bf16, fp16 or fp32")->capture_default_str();
  app.add_option("--scale", o.scale, "SMOKE RUNS ONLY: divide Sq and Sk by F (numbers not comparable to the anchors)")
      ->capture_default_str()->check(CLI::Range(1.0, 1e9))->type_name("F");
  app.add_option("--seed", o.seed, "seed of the random normal inputs")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
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
