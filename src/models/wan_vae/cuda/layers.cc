// The Wan VAE decoder's layers on CUDA (see layers.h). Each forward mirrors its CPU twin in blocks.cc and
// conv_layers.cc step by step; only the layout (channels-last) and the kernels differ.
#ifdef DATTN_WITH_CUDA
#include "models/wan_vae/cuda/layers.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "models/wan_vae/cuda/conv.h"
#include "models/wan_vae/cuda/cuda_decoder.h"
#include "models/wan_vae/cuda/kernels.h"
#include "ops/cuda/gemm.h"

namespace dattn::wan_vae {

namespace {
std::atomic<bool> g_poison{false};
std::atomic<std::int64_t> g_score_bytes{0};
}  // namespace

void set_cuda_poison(bool on) { g_poison = on; }
void set_cuda_attention_score_bytes(std::int64_t bytes) { g_score_bytes = bytes; }

namespace gpu {
namespace {

char* bytes_of(Tensor& t) { return static_cast<char*>(t.data()); }
const char* bytes_of(const Tensor& t) { return static_cast<const char*>(t.data()); }
float* floats(Tensor& t) { return t.data_as<float>(); }
const float* floats(const Tensor& t) { return t.data_as<float>(); }

std::vector<float> take_host(WeightStore& store, const std::string& name, const Shape& shape) {
  return store.take(name, DType::F32, Device::CPU, shape).to_f32_vector();
}

Tensor upload(const std::vector<float>& v, const Shape& shape) {
  return Tensor::from_f32(v, shape).to(Device::CUDA);
}

void check_frames(const char* layer, const Tensor& x, int channels) {
  if (x.ndim() != 4 || x.dim(3) != channels || x.device() != Device::CUDA || x.dtype() != DType::F32)
    throw std::logic_error(std::string("wan_vae cuda ") + layer + ": input " + x.describe() + ", expected [T,H,W," +
                           std::to_string(channels) + "] f32 cuda");
}

}  // namespace

Tensor new_tensor(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::F32, Device::CUDA);
  if (g_poison) fill_async(t.data(), 0xFF, t.bytes());  // 0xFFFFFFFF is a NaN
  return t;
}

Tensor new_frames(std::int64_t t, std::int64_t h, std::int64_t w, std::int64_t c) { return new_tensor({t, h, w, c}); }

// ---- Conv ----

Conv::Conv(WeightStore& store, const std::string& name, int cin, int cout, int kt, int k, bool conv2d, bool tf32,
           SlotCounter* slots)
    : cin_(cin), cout_(cout), kt_(kt), k_(k), tf32_(tf32) {
  const Shape torch_shape = conv2d ? Shape{cout, cin, k, k} : Shape{cout, cin, kt, k, k};
  const std::vector<float> w = take_host(store, name + ".weight", torch_shape);
  // [cout, cin, kt, k, k] -> [cout, kt, k, k, cin]
  std::vector<float> packed(w.size());
  const std::int64_t taps = std::int64_t{kt} * k * k;
  for (std::int64_t o = 0; o < cout; ++o)
    for (std::int64_t i = 0; i < cin; ++i)
      for (std::int64_t t = 0; t < taps; ++t) packed[(o * taps + t) * cin + i] = w[(o * cin + i) * taps + t];
  weight_ = upload(packed, {cout, kt, k, k, cin});
  bias_ = upload(take_host(store, name + ".bias", {cout}), {cout});
  if (kt > 1) {
    if (!slots) throw std::logic_error("wan_vae cuda Conv " + name + ": a causal conv needs a cache slot");
    slot_ = slots->take();
  }
}

Tensor Conv::run(const Tensor& stream, std::int64_t h, std::int64_t w) const {
  // Fresh pool allocations are 256-byte aligned; a frame view of an odd-sized tensor may not be, and the
  // tensor-core kernels want aligned operands.
  const Tensor in = reinterpret_cast<std::uintptr_t>(stream.data()) % 256 ? stream.clone() : stream;
  Tensor out = new_frames(in.dim(0) - kt_ + 1, h, w, cout_);
  ConvGeometry g;
  g.frames_in = static_cast<int>(in.dim(0)), g.h = static_cast<int>(h), g.w = static_cast<int>(w);
  g.cin = cin_, g.cout = cout_, g.kt = kt_, g.k = k_, g.tf32 = tf32_;
  conv3d(g, floats(in), floats(weight_), floats(bias_), floats(out));
  return out;
}

Tensor Conv::forward(const Tensor& x) const {
  check_frames("Conv", x, cin_);
  if (kt_ != 1) throw std::logic_error("wan_vae cuda Conv: a causal conv needs its frame cache");
  return run(x, x.dim(1), x.dim(2));
}

Tensor Conv::forward(const Tensor& x, FrameCache& cache, const RmsNorm* norm) const {
  if (kt_ == 1 && !norm) return forward(x);
  if (kt_ == 1) throw std::logic_error("wan_vae cuda Conv: a fused norm needs a causal conv");
  check_frames("CausalConv3d", x, cin_);
  const std::int64_t frames = x.dim(0), h = x.dim(1), w = x.dim(2), pad = kt_ - 1;
  const std::size_t frame_bytes = static_cast<std::size_t>(h * w * cin_) * sizeof(float);
  const Tensor& tail = cache.tail[slot_];
  const std::int64_t n_tail = tail.defined() ? tail.dim(0) : 0;
  if (tail.defined() && (tail.dim(1) != h || tail.dim(2) != w || tail.dim(3) != cin_ || n_tail > pad))
    throw std::logic_error("wan_vae cuda CausalConv3d: cached " + tail.describe() + " does not match " + x.describe());
  // The stream this chunk continues: zero frames where the cache is shorter than the padding, the cached
  // frames, then x. As the CPU's null frames, the zeros contribute exactly nothing.
  Tensor stream = new_frames(pad + frames, h, w, cin_);
  fill_async(bytes_of(stream), 0, (pad - n_tail) * frame_bytes);
  if (n_tail) copy_async(bytes_of(stream) + (pad - n_tail) * frame_bytes, bytes_of(tail), n_tail * frame_bytes);
  if (norm)
    norm->apply(x, reinterpret_cast<float*>(bytes_of(stream) + pad * frame_bytes), /*silu=*/true);
  else
    copy_async(bytes_of(stream) + pad * frame_bytes, bytes_of(x), frames * frame_bytes);
  Tensor out = run(stream, h, w);
  // Keep the last `pad` frames of the stream, fewer while the stream (zeros excluded) is shorter.
  const std::int64_t keep = std::min(pad, n_tail + frames);
  Tensor next = new_frames(keep, h, w, cin_);
  copy_async(bytes_of(next), bytes_of(stream) + (pad + frames - keep) * frame_bytes, keep * frame_bytes);
  cache.tail[slot_] = next;
  return out;
}

// ---- RmsNorm ----

RmsNorm::RmsNorm(WeightStore& store, const std::string& name, int dim, bool images) : dim_(dim) {
  const Shape shape = images ? Shape{dim, 1, 1} : Shape{dim, 1, 1, 1};
  std::vector<float> gain = take_host(store, name + ".gamma", shape);
  const float scale = std::sqrt(static_cast<float>(dim));  // the CPU's rms_norm computes scale * gamma[c] so
  for (float& g : gain) g = scale * g;
  gain_ = upload(gain, {dim});
}

Tensor RmsNorm::forward(const Tensor& x, bool silu) const {
  Tensor y = new_tensor(x.shape());
  apply(x, floats(y), silu);
  return y;
}

void RmsNorm::apply(const Tensor& x, float* y, bool silu) const {
  check_frames("RmsNorm", x, dim_);
  rms_norm(floats(x), y, floats(gain_), x.numel() / dim_, dim_, silu);
}

// ---- ResidualBlock ----

ResidualBlock::ResidualBlock(WeightStore& store, const std::string& name, int in_dim, int out_dim, bool tf32,
                             SlotCounter& slots)
    : norm1_(store, name + ".norm1", in_dim, false),
      norm2_(store, name + ".norm2", out_dim, false),
      conv1_(store, name + ".conv1", in_dim, out_dim, 3, 3, false, tf32, &slots),
      conv2_(store, name + ".conv2", out_dim, out_dim, 3, 3, false, tf32, &slots) {
  if (in_dim != out_dim) shortcut_.emplace_back(store, name + ".conv_shortcut", in_dim, out_dim, 1, 1, false, tf32, &slots);
}

Tensor ResidualBlock::forward(const Tensor& x, FrameCache& cache) const {
  const Tensor h = shortcut_.empty() ? x : shortcut_[0].forward(x);
  Tensor y = conv1_.forward(x, cache, &norm1_);  // conv1(SiLU(norm1(x)))
  y = conv2_.forward(y, cache, &norm2_);         // dropout is the identity at inference
  add_inplace(floats(y), floats(h), y.numel());
  return y;
}

// ---- AttentionBlock ----

AttentionBlock::AttentionBlock(WeightStore& store, const std::string& name, int dim)
    : dim_(dim), norm_(store, name + ".norm", dim, true) {
  const std::int64_t d = dim;
  const std::vector<float> wqkv = take_host(store, name + ".to_qkv.weight", {3 * d, d, 1, 1});
  const std::vector<float> bqkv = take_host(store, name + ".to_qkv.bias", {3 * d});
  const std::vector<float> wp = take_host(store, name + ".proj.weight", {d, d, 1, 1});
  const std::vector<float> bp = take_host(store, name + ".proj.bias", {d});
  const auto rows = [&](const std::vector<float>& v, std::int64_t part, std::int64_t width) {
    return std::vector<float>(v.begin() + part * width, v.begin() + (part + 1) * width);
  };
  wq_ = upload(rows(wqkv, 0, d * d), {d, d});
  wk_ = upload(rows(wqkv, 1, d * d), {d, d});
  wv_ = upload(rows(wqkv, 2, d * d), {d, d});
  bq_ = upload(rows(bqkv, 0, d), {d});
  bk_ = upload(rows(bqkv, 1, d), {d});
  // v's bias passes through attention unchanged (each softmax row sums to 1), so it is folded into proj's:
  // proj(P (V + bv)) = Wp P V + (Wp bv + bp). That keeps v a plain GEMM in the [dim, pixels] layout.
  std::vector<float> folded(d);
  for (std::int64_t o = 0; o < d; ++o) {
    double s = bp[o];
    for (std::int64_t c = 0; c < d; ++c) s += static_cast<double>(wp[o * d + c]) * bqkv[2 * d + c];
    folded[o] = static_cast<float>(s);
  }
  wp_ = upload(wp, {d, d});
  bp_ = upload(folded, {d});
}

Tensor AttentionBlock::forward(const Tensor& x) const {
  using ops::cuda::gemm_xwt;
  check_frames("AttentionBlock", x, dim_);
  const Tensor normed = norm_.forward(x, /*silu=*/false);
  const std::int64_t frames = x.dim(0), pixels = x.dim(1) * x.dim(2), d = dim_;
  Tensor out = new_tensor(x.shape());
  // Per frame: the normed pixels are the token rows xt [pixels, d]. q, k [pixels, d] = xt W^T + b;
  // v [d, pixels] = Wv xt^T, the layout in which the second product reads it; scores [queries, pixels].
  Tensor q = new_tensor({pixels, d}), k = new_tensor({pixels, d}), v = new_tensor({d, pixels});
  Tensor o = new_tensor({pixels, d});
  const std::int64_t score_bytes = g_score_bytes > 0 ? g_score_bytes.load() : kScoreBytes;
  const std::int64_t block = std::clamp<std::int64_t>(score_bytes / (pixels * 4), 1, pixels);
  Tensor s = new_tensor({block, pixels});
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (std::int64_t f = 0; f < frames; ++f) {
    const float* xt = floats(normed) + f * pixels * d;
    gemm_xwt(xt, floats(wq_), floats(bq_), floats(q), pixels, d, d, DType::F32);
    gemm_xwt(xt, floats(wk_), floats(bk_), floats(k), pixels, d, d, DType::F32);
    gemm_xwt(floats(wv_), xt, nullptr, floats(v), d, pixels, d, DType::F32);
    for (std::int64_t q0 = 0; q0 < pixels; q0 += block) {
      const std::int64_t n = std::min(block, pixels - q0);
      gemm_xwt(floats(q) + q0 * d, floats(k), nullptr, floats(s), n, pixels, d, DType::F32);
      softmax_rows(floats(s), n, pixels, scale);
      gemm_xwt(floats(s), floats(v), nullptr, floats(o) + q0 * d, n, d, pixels, DType::F32);
    }
    gemm_xwt(floats(o), floats(wp_), floats(bp_), floats(out) + f * pixels * d, pixels, d, d, DType::F32);
  }
  add_inplace(floats(out), floats(x), out.numel());
  return out;
}

// ---- Resample ----

Resample::Resample(WeightStore& store, const std::string& name, int dim, int out_dim, bool temporal, bool tf32,
                   SlotCounter& slots)
    : dim_(dim), temporal_(temporal), conv_(store, name + ".resample.1", dim, out_dim, 1, 3, true, tf32, nullptr) {
  if (temporal) {
    time_conv_.emplace_back(store, name + ".time_conv", dim, 2 * dim, 3, 1, false, tf32, &slots);
    slot_ = slots.take();
  }
}

Tensor Resample::forward(const Tensor& x, FrameCache& cache) const {
  check_frames("Resample", x, dim_);
  Tensor src = x;
  int parts = 1;
  if (temporal_) {
    if (!cache.started[slot_]) {
      cache.started[slot_] = true;  // the first chunk is not doubled in time (see the CPU's Resample)
    } else {
      // [T, H, W, 2 * dim]: channels [0, dim) are frame 2t, [dim, 2 dim) frame 2t + 1; the upsampling
      // kernel reads them as 2T frames.
      src = time_conv_[0].forward(x, cache);
      parts = 2;
    }
  }
  const std::int64_t h = src.dim(1), w = src.dim(2);
  Tensor up = new_frames(src.dim(0) * parts, 2 * h, 2 * w, dim_);
  upsample_nearest2x(floats(src), floats(up), src.dim(0), h, w, dim_, parts);
  return conv_.forward(up);
}

// ---- UpBlock ----

UpBlock::UpBlock(WeightStore& store, const std::string& name, int in_dim, int out_dim, int num_res_blocks,
                 bool residual, bool up, bool temporal, bool tf32, SlotCounter& slots) {
  int dim = in_dim;
  for (int i = 0; i <= num_res_blocks; ++i) {
    resnets_.emplace_back(store, name + ".resnets." + std::to_string(i), dim, out_dim, tf32, slots);
    dim = out_dim;
  }
  if (!up) return;
  if (residual)
    upsampler_.emplace_back(store, name + ".upsampler", out_dim, out_dim, temporal, tf32, slots);
  else
    upsampler_.emplace_back(store, name + ".upsamplers.0", out_dim, out_dim / 2, temporal, tf32, slots);
  dup_shortcut_ = residual;
  factor_t_ = temporal ? 2 : 1;
}

Tensor UpBlock::forward(const Tensor& x, FrameCache& cache, bool first_chunk) const {
  Tensor h = x;
  for (const auto& r : resnets_) h = r.forward(h, cache);
  if (!upsampler_.empty()) h = upsampler_[0].forward(h, cache);
  if (dup_shortcut_) {
    const std::int64_t t_in = x.dim(0), c_in = x.dim(3), hh = x.dim(1), ww = x.dim(2), c_out = h.dim(3);
    const int drop = first_chunk ? factor_t_ - 1 : 0, fs = 2;
    if ((c_out * factor_t_ * fs * fs) % c_in != 0 || h.dim(0) != t_in * factor_t_ - drop || h.dim(1) != hh * fs ||
        h.dim(2) != ww * fs)
      throw std::logic_error("wan_vae cuda DupUp3D: input " + x.describe() + " does not map onto " + h.describe());
    add_dup_up(floats(h), floats(x), h.dim(0), c_out, hh, ww, c_in, factor_t_, fs, drop);
  }
  return h;
}

}  // namespace gpu
}  // namespace dattn::wan_vae
#endif  // DATTN_WITH_CUDA
