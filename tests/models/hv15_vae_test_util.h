#pragma once
// Shared by the HunyuanVideo-1.5 VAE tests (CPU and CUDA): the golden tiny VAE and decode case, the
// decoder run with every intermediate recorded and put back into diffusers' [1, C, T, H, W] layout, and
// relative L2 / max abs against a float64 reference.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/hunyuanvideo15_vae.h"
#include "dattn/ops/combine.h"
#include "models/hunyuanvideo15_vae/decoder.h"
#include "support/golden_dir.h"

namespace dattn::testing {

inline std::string hv15_vae_dir() { return golden_dir() + "/hv15_tiny/pipeline/vae"; }
inline std::string hv15_vae_case() { return golden_dir() + "/hv15_tiny/cases/vae_decode.safetensors"; }

struct Error {
  double rel_l2 = 0, max_abs = 0, max_ref = 0;
  std::size_t nonfinite = 0;
};

inline Error error_of(const std::vector<double>& got, const std::vector<double>& ref) {
  Error e;
  if (got.size() != ref.size()) return {1e300, 1e300, 0, got.size()};
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++e.nonfinite;
      continue;
    }
    err2 += (got[i] - ref[i]) * (got[i] - ref[i]);
    ref2 += ref[i] * ref[i];
    e.max_abs = std::max(e.max_abs, std::abs(got[i] - ref[i]));
    e.max_ref = std::max(e.max_ref, std::abs(ref[i]));
  }
  e.rel_l2 = std::sqrt(err2 / std::max(ref2, 1e-300));
  return e;
}

// Frames [T, H, W, C] (appended over the decode's calls) as diffusers' [1, C, T, H, W] values.
inline std::vector<double> to_ncthw(const std::vector<double>& thwc, std::int64_t c, std::int64_t t, std::int64_t hw) {
  std::vector<double> out(thwc.size());
  for (std::int64_t f = 0; f < t; ++f)
    for (std::int64_t p = 0; p < hw; ++p)
      for (std::int64_t ch = 0; ch < c; ++ch) out[(ch * t + f) * hw + p] = thwc[(f * hw + p) * c + ch];
  return out;
}

struct Recorded {
  std::vector<double> values;  // channels-last, in time order
  Shape frame;                 // [H, W, C]
  std::int64_t frames = 0;
  std::vector<double> ncthw() const { return to_ncthw(values, frame[2], frames, frame[0] * frame[1]); }
};

// Decodes z [1, C, T, H, W] frame by frame through the internal decoder on `device` with activations of
// `dtype`, recording every intermediate it reports.
inline std::map<std::string, Recorded> decode_recording(const std::string& dir, const Tensor& z, Device device,
                                                        ops::ConvMath math, std::vector<double>* video_thwc,
                                                        DType dtype = DType::F32) {
  const HunyuanVideo15VaeConfig config = HunyuanVideo15VaeConfig::from_json(read_component_config(dir));
  WeightStore store(dir);
  const hunyuanvideo15_vae::Decoder decoder(store, config, device, math, dtype);
  const std::int64_t c = z.dim(1), t = z.dim(2), h = z.dim(3), w = z.dim(4);
  hunyuanvideo15_vae::DecodeState state = decoder.new_state(t, h, w);
  std::map<std::string, Recorded> rec;
  const std::vector<double> zv = z.to_f64_vector();
  for (std::int64_t f = 0; f < t; ++f) {
    std::vector<float> frame(static_cast<std::size_t>(h * w * c));
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t p = 0; p < h * w; ++p) frame[p * c + ch] = static_cast<float>(zv[(ch * t + f) * h * w + p]);
    decoder.forward(
        ops::cast(Tensor::from_f32(frame, {1, h, w, c}).to(device), dtype), state,
        [&](const Tensor& out) {
          const std::vector<double> v = out.to_f64_vector();
          video_thwc->insert(video_thwc->end(), v.begin(), v.end());
        },
        [&](const std::string& name, const Tensor& x) {
          Recorded& r = rec[name];
          const std::vector<double> v = x.to_f64_vector();
          r.values.insert(r.values.end(), v.begin(), v.end());
          r.frame = {x.dim(1), x.dim(2), x.dim(3)};
          r.frames += x.dim(0);
        });
  }
  return rec;
}

}  // namespace dattn::testing
