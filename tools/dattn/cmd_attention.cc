// dattn attention: run one attention problem on random inputs with one or more backends and print
// time and error against the float64 reference.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/layer.h"
#include "dattn/attention/metrics.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/attention/selector.h"
#include "dattn/command.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/core/human_bytes.h"
#include "dattn/core/process_memory.h"
#include "dattn/device_option.h"
#include "dattn/integer_option.h"
#include "dattn/models/attention_roles.h"
#include "dattn/shape_option.h"

namespace dattn::tool {
namespace {

struct AttentionOptions {
  std::string backends;  // NAME, NAME,NAME or all; empty: resolve --role through the configuration
  std::string shape;     // B,Sq,Sk,H,D
  std::optional<std::int64_t> kv_heads;  // unset: H
  std::string dtype = "auto";
  std::optional<std::int64_t> key_padding;  // unset: every key (no mask)
  bool causal = false;
  int repeat = 3;
  std::string role = "self";
  std::string device = "cpu";
  std::optional<unsigned> seed;  // unset: a fresh one
  bool json = false;
  bool no_check = false;
  std::string inputs = "gaussian";
};

AttentionShape parse_shape(const AttentionOptions& o) {
  AttentionShape s = shape_from_option(o.shape);
  if (o.kv_heads && *o.kv_heads < 1)
    throw UserError("--kv-heads " + std::to_string(*o.kv_heads) + ": expected a positive number");
  s.heads_kv = o.kv_heads.value_or(s.heads_q);
  s.validate();
  if (o.key_padding && *o.key_padding > s.seq_k)
    throw UserError("--key-padding " + std::to_string(*o.key_padding) + ": more than Sk = " + std::to_string(s.seq_k));
  s.mask = o.causal ? MaskKind::Causal : o.key_padding ? MaskKind::KeyPadding : MaskKind::None;
  s.validate();  // causal needs Sq == Sk
  return s;
}

std::vector<const AttentionBackend*> chosen_backends(const std::string& list) {
  if (list == "all" || list == "ALL") return registered_backends();
  std::vector<const AttentionBackend*> out;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) out.push_back(&backend_by_name(name));
  return out;
}

// Extras for `backend`: those of the first configured spec for the role (per_role[role],
// per_role[category], default) that names this backend; none otherwise.
nlohmann::json configured_extra(const AttentionSettings& st, const std::string& role, const AttentionBackend& b) {
  std::vector<const AttentionSpec*> specs;
  if (auto it = st.config.per_role.find(role); it != st.config.per_role.end()) specs.push_back(&it->second);
  if (auto cat = known_role_category(role))
    if (auto it = st.config.per_role.find(*cat); it != st.config.per_role.end()) specs.push_back(&it->second);
  if (st.config.default_spec) specs.push_back(&*st.config.default_spec);
  for (const AttentionSpec* s : specs)
    if (s->backend == b.name()) return s->extra;
  return nlohmann::json::object();
}

struct Inputs {
  std::vector<float> q, k, v;  // values exactly representable in bf16, so every dtype carries the same numbers
};

// gaussian: every element N(0, 1). local: q and k of token i share a smooth function of the token's
// position plus noise, so each query attends mostly to nearby keys, as in video attention; this is the
// structure SPARSE_BLOCK relies on. v is N(0, 1) in both. Values are rounded to bf16.
Inputs make_inputs(const AttentionShape& s, const std::string& kind, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const auto round_bf16 = [](float x) { return bf16_to_f32(f32_to_bf16(x)); };
  // Random Fourier features of the position: a few cycles over the sequence per channel.
  std::uniform_real_distribution<float> freq(0.0f, 40.0f), phase(0.0f, 6.2831853f);
  std::vector<float> w(s.head_dim), ph(s.head_dim);
  for (std::int64_t d = 0; d < s.head_dim; ++d) w[d] = freq(rng), ph[d] = phase(rng);
  const float amp = 2.0f;  // q.k / sqrt(D) spans several units between near and far tokens
  auto fill = [&](std::vector<float>& x, std::int64_t seq, std::int64_t heads, bool positional) {
    x.resize(s.batch * seq * heads * s.head_dim);
    std::size_t idx = 0;
    for (std::int64_t b = 0; b < s.batch; ++b)
      for (std::int64_t t = 0; t < seq; ++t)
        for (std::int64_t h = 0; h < heads; ++h)
          for (std::int64_t d = 0; d < s.head_dim; ++d) {
            float value = n(rng);
            if (positional) value = amp * std::cos(w[d] * float(t) / float(seq) + ph[d]) + 0.5f * value;
            x[idx++] = round_bf16(value);
          }
  };
  const bool local = kind == "local";
  if (!local && kind != "gaussian") throw UserError("--inputs '" + kind + "': expected gaussian or local");
  Inputs in;
  fill(in.q, s.seq_q, s.heads_q, local);
  fill(in.k, s.seq_k, s.heads_kv, local);
  fill(in.v, s.seq_k, s.heads_kv, false);
  return in;
}

std::vector<std::uint8_t> as_dtype(const std::vector<float>& x, DType t) {
  std::vector<std::uint8_t> bytes(x.size() * dtype_size(t));
  from_f32(x.data(), t, bytes.data(), x.size());
  return bytes;
}

// auto: bf16 when the backend takes it (the dtype models run in), else fp32.
DType dtype_for(const std::string& opt, const AttentionBackend& b, const AttentionShape& shape, Device device) {
  if (opt != "auto") {
    auto t = parse_dtype(opt);
    if (!t) throw UserError("--dtype '" + opt + "': expected auto, fp32, bf16 or fp16");
    return *t;
  }
  // Decided by the surface, not the full predicate, so that a refusal names the real reason (a head
  // dim, say) rather than a dtype we picked.
  const auto dtypes = b.surface(device).dtypes;
  if (std::find(dtypes.begin(), dtypes.end(), DType::BF16) != dtypes.end()) return DType::BF16;
  return dtypes.empty() ? shape.dtype : dtypes.front();
}

struct Row {
  std::string backend, dtype, status;
  DType type = DType::F32;  // the dtype it runs (dtype is its name)
  std::string unsupported;  // the support predicate's reason when the backend cannot run the problem
  double ms = 0, gflops = 0;
  ErrorStats err;
  bool checked = true;  // false with --no-check: err holds only the non-finite count
};

// The row of a backend that cannot run the problem, or an "ok" row to fill in; asked before any work.
Row support_row(const AttentionBackend& b, const AttentionOptions& o, const AttentionShape& shape, Device device) {
  Row row;
  row.backend = std::string(b.name());
  row.status = "ok";
  AttentionShape typed = shape;
  typed.dtype = dtype_for(o.dtype, b, shape, device);
  row.type = typed.dtype;
  row.dtype = std::string(dtype_name(typed.dtype));
  if (Support s = b.supports(typed, device); !s.ok) {
    row.status = "unsupported: " + s.reason;
    row.unsupported = s.reason;
  }
  return row;
}

// Refuses a problem whose buffers cannot fit before any is allocated: the inputs (fp32), the float64
// reference (unless --no-check) and one backend's run (its input copies, output, fp32 conversions and
// the output read back as doubles), against MemAvailable; on CUDA also the device copies against the
// device's free memory. Sizes are known not to overflow (AttentionShape::validate).
void check_memory(const AttentionShape& s, bool reference, Device device) {
  const double q = double(s.batch) * double(s.seq_q) * double(s.heads_q) * double(s.head_dim);
  const double kv = double(s.batch) * double(s.seq_k) * double(s.heads_kv) * double(s.head_dim);
  const double host = 4 * (q + 2 * kv) + (reference ? 8 * (2 * q + 2 * kv) : 0) + 4 * (2 * q + 2 * kv) + 8 * q +
                      (device == Device::CPU ? 4 * (q + 2 * kv) : 0);
  const auto refuse = [&](const char* what, double need, std::int64_t have, const char* hint) {
    throw UserError("attention " + s.describe() + ": needs about " + human_bytes(static_cast<std::int64_t>(need)) +
                    " of " + what + ", " + human_bytes(have) + " available; use a smaller --shape" + hint);
  };
  const std::int64_t host_free = host_memory_available_bytes();
  if (host_free >= 0 && host > double(host_free))
    refuse("host memory (inputs, float64 reference, one backend's buffers)", host, host_free,
           reference ? " or --no-check (no float64 reference)" : "");
  if (device == Device::CUDA) {
    const double dev = 4 * (2 * q + 2 * kv);  // q, k, v and out in up to 4-byte elements
    const std::int64_t dev_free = cuda_free_memory_bytes();
    if (dev_free >= 0 && dev > double(dev_free)) refuse("device memory (q, k, v, out)", dev, dev_free, "");
  }
}

Row run_one(const AttentionBackend& b, const AttentionOptions& o, AttentionShape shape, const Inputs& in,
            const std::vector<double>& ref, const nlohmann::json& extra, Device device) {
  Row row = support_row(b, o, shape, device);
  if (!row.unsupported.empty()) return row;
  shape.dtype = row.type;
  const auto q = as_dtype(in.q, shape.dtype), k = as_dtype(in.k, shape.dtype), v = as_dtype(in.v, shape.dtype);
  const std::size_t n_out = static_cast<std::size_t>(shape.batch * shape.seq_q * shape.heads_q * shape.head_dim);
  std::vector<std::uint8_t> out(n_out * dtype_size(shape.dtype), 0xFF);  // NaN poison
  AttentionProblem p;
  p.shape = shape;
  if (o.key_padding) p.key_lengths.assign(shape.batch, *o.key_padding);
  const nlohmann::json full_extra = extra_with_defaults(b, extra);
  std::vector<double> times;
  if (device == Device::CUDA) {
    // Device copies of the same bytes; the output comes back once, after the timed runs.
    DeviceBuffer dq(q.size()), dk(k.size()), dv(v.size()), dout(out.size());
    dq.upload(q.data(), q.size()), dk.upload(k.data(), k.size()), dv.upload(v.data(), v.size());
    dout.fill(0xFF);
    p.q = dq.get(), p.k = dk.get(), p.v = dv.get(), p.out = dout.get();
    GpuTimer timer;
    for (int r = 0; r <= o.repeat; ++r) {  // run 0 warms up and is not timed
      timer.start();
      run_attention(b, p, full_extra, device);
      timer.stop();
      if (r > 0) times.push_back(timer.elapsed_ms());
    }
    check_device("attention kernel");
    dout.download(out.data(), out.size());
  } else {
    p.q = q.data(), p.k = k.data(), p.v = v.data(), p.out = out.data();
    for (int r = 0; r <= o.repeat; ++r) {  // run 0 warms up and is not timed
      const auto t0 = std::chrono::steady_clock::now();
      run_attention(b, p, full_extra, device);
      const auto t1 = std::chrono::steady_clock::now();
      if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  std::sort(times.begin(), times.end());
  row.ms = times[times.size() / 2];
  row.gflops = shape.flops() / (row.ms * 1e6);
  std::vector<double> got(n_out);
  to_f64(out.data(), shape.dtype, got.data(), got.size());
  if (ref.empty()) {  // --no-check: only the NaN/Inf count
    for (double x : got) row.err.nonfinite += !std::isfinite(x);
    row.checked = false;
  } else {
    row.err = compare(got.data(), ref.data(), got.size());
  }
  return row;
}

int run_attention_cmd(const AttentionOptions& o, const CommandContext& ctx) {
  const Device device = device_from_option(o.device);
  require_usable_device(device);
  if (o.repeat < 1) throw UserError("--repeat " + std::to_string(o.repeat) + ": expected at least 1");
  const AttentionShape shape = parse_shape(o);
  const AttentionSettings settings = settings_from_command_line(ctx.attention_flags);
  std::vector<const AttentionBackend*> backends;
  std::vector<nlohmann::json> extras;
  if (o.backends.empty()) {
    // Built as a model layer is: resolution logged once, an explicit backend that cannot run the
    // problem refused here with the layer error.
    const auto category = known_role_category(o.role);
    const Resolution r = resolve_attention(settings, o.role, category, shape, device);
    AttentionShape layer_shape = shape;
    layer_shape.dtype = dtype_for(o.dtype, backend_by_name(r.backend), shape, device);
    const AttentionLayer layer("dattn attention", o.role, category, settings, layer_shape, device);
    backends.push_back(&layer.backend());
    extras.push_back(layer.resolution().extra);
  } else {
    backends = chosen_backends(o.backends);
    for (const AttentionBackend* b : backends) extras.push_back(configured_extra(settings, o.role, *b));
  }
  // Whether anything can run is known before the inputs and the float64 reference (minutes for large
  // shapes) are made: a single backend that cannot run the problem, or none of several, is the user's
  // error, not a table of refusals.
  std::vector<Row> refusals;
  for (const AttentionBackend* b : backends) refusals.push_back(support_row(*b, o, shape, device));
  if (std::all_of(refusals.begin(), refusals.end(), [](const Row& r) { return !r.unsupported.empty(); })) {
    if (refusals.size() == 1)
      throw UserError(refusals[0].backend + " cannot run " + shape.describe() + " (" + refusals[0].dtype + ") on " +
                      std::string(device_name(device)) + ": " + refusals[0].unsupported);
    std::string why;
    for (const Row& r : refusals) why += (why.empty() ? "" : "; ") + r.backend + " (" + r.dtype + "): " + r.unsupported;
    throw UserError("no backend can run " + shape.describe() + " on " + std::string(device_name(device)) + ": " + why);
  }
  check_memory(shape, !o.no_check, device);
  const unsigned seed = o.seed ? *o.seed : std::random_device{}();  // 0 is a seed like any other
  const Inputs in = make_inputs(shape, o.inputs, seed);
  // The reference sees the same numbers every backend sees (bf16-exact values stored as fp32).
  AttentionProblem ref_problem;
  ref_problem.shape = shape;
  ref_problem.shape.dtype = DType::F32;
  ref_problem.q = in.q.data(), ref_problem.k = in.k.data(), ref_problem.v = in.v.data();
  std::vector<float> unused_out(1);
  ref_problem.out = unused_out.data();
  if (o.key_padding) ref_problem.key_lengths.assign(shape.batch, *o.key_padding);
  std::vector<double> ref;  // stays empty with --no-check
  if (!o.no_check) attention_reference_f64(ref_problem, ref);

  std::vector<Row> rows;
  for (std::size_t i = 0; i < backends.size(); ++i)
    rows.push_back(run_one(*backends[i], o, shape, in, ref, extras[i], device));
  if (o.json) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      nlohmann::ordered_json e{{"backend", r.backend}, {"dtype", r.dtype}, {"status", r.status}};
      if (r.status == "ok") e.update({{"ms", r.ms}, {"gflops", r.gflops}, {"nonfinite", r.err.nonfinite}});
      if (r.status == "ok" && r.checked)
        e.update({{"rel_l2", r.err.rel_l2}, {"max_abs", r.err.max_abs}, {"cosine", r.err.cosine}});
      arr.push_back(e);
    }
    std::printf("%s\n", arr.dump().c_str());
    return 0;
  }
  const std::string padding = (o.key_padding ? " key-padding=" + std::to_string(*o.key_padding) : "") +
                              (o.causal ? " causal" : "");
  std::printf("attention B=%lld Sq=%lld Sk=%lld Hq=%lld Hkv=%lld D=%lld%s on %s, %s inputs, seed %u, median of %d "
              "runs, %s\n",
              (long long)shape.batch, (long long)shape.seq_q, (long long)shape.seq_k, (long long)shape.heads_q,
              (long long)shape.heads_kv, (long long)shape.head_dim, padding.c_str(),
              std::string(device_name(device)).c_str(), o.inputs.c_str(), seed, o.repeat,
              o.no_check ? "not checked (--no-check)" : "error vs float64 reference");
  std::printf("%-13s %-5s %10s %9s %10s %10s %9s  %s\n", "backend", "dtype", "time_ms", "GFLOP/s", "rel_l2",
              "max_abs", "cosine", "status");
  for (const Row& r : rows) {
    if (r.status != "ok") {
      std::printf("%-13s %-5s %10s %9s %10s %10s %9s  %s\n", r.backend.c_str(), r.dtype.c_str(), "-", "-", "-", "-",
                  "-", r.status.c_str());
      continue;
    }
    const std::string status = r.err.nonfinite ? "NON-FINITE x" + std::to_string(r.err.nonfinite) : "ok";
    if (r.checked)
      std::printf("%-13s %-5s %10.2f %9.2f %10.2e %10.2e %9.6f  %s\n", r.backend.c_str(), r.dtype.c_str(), r.ms,
                  r.gflops, r.err.rel_l2, r.err.max_abs, r.err.cosine, status.c_str());
    else
      std::printf("%-13s %-5s %10.2f %9.2f %10s %10s %9s  %s\n", r.backend.c_str(), r.dtype.c_str(), r.ms, r.gflops,
                  "-", "-", "-", status.c_str());
  }
  std::printf("GFLOP/s counts the dense problem, 4*B*H*Sq*Sk*D%s, for every backend (padded and sparse too)\n",
              o.causal ? " / 2 (causal)" : "");
  for (const Row& r : rows)
    if (r.status == "ok" && r.err.nonfinite) return 1;
  return 0;
}

}  // namespace

Command add_attention_command(CLI::App& root) {
  auto o = std::make_shared<AttentionOptions>();
  CLI::App* app = root.add_subcommand("attention", "Run one attention problem on random inputs; print time and "
                                                   "error against the float64 reference");
  app->add_option("--backend", o->backends,
                  "Backend(s): NAME, a comma-separated list, or all. Without it, --role is resolved through the "
                  "attention configuration. Extras come from the configured spec that names the backend")
      ->type_name("NAME[,NAME]|all");
  app->add_option("--shape", o->shape, "Problem size B,Sq,Sk,H,D (batch, query tokens, key tokens, heads, head dim)")
      ->required()->type_name("B,Sq,Sk,H,D");
  add_integer_option(*app, "--kv-heads", o->kv_heads, "K/V heads (must divide H; default H)");
  app->add_option("--dtype", o->dtype, "fp32, bf16, fp16, or auto (bf16 where the backend takes it, else fp32)")
      ->capture_default_str();
  add_integer_option(*app, "--key-padding", o->key_padding, "Valid keys per batch item, 0 to Sk (default: all)")->type_name("N");
  app->add_flag("--causal", o->causal, "Causal mask (query i sees keys <= i; needs Sq == Sk), with --key-padding if given");
  add_integer_option(*app, "--repeat", o->repeat, "Timed runs after one warm-up; the median is reported")->capture_default_str();
  app->add_option("--role", o->role, "Role whose configuration applies")->capture_default_str();
  app->add_option("--device", o->device, "cpu or cuda")->capture_default_str();
  add_integer_option(*app, "--seed", o->seed, "Seed of the random inputs (default: fresh)");
  app->add_flag("--json", o->json, "Print one JSON array, one object per backend");
  app->add_option("--inputs", o->inputs,
                  "gaussian (every element N(0,1)) or local (q/k share a smooth function of position, so "
                  "attention is local as in video models)")->capture_default_str();
  app->add_flag("--no-check", o->no_check,
                "Skip the float64 reference (slow for large shapes); only NaN/Inf are counted");
  document_attention_flags(*app);
  return {app, true, [o](const CommandContext& ctx) { return run_attention_cmd(*o, ctx); }};
}

}  // namespace dattn::tool
