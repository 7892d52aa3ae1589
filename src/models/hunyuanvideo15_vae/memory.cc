// hunyuanvideo15_vae_decode_memory: a model of what the streamed decode holds on its device at its peak.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "dattn/core/checked_math.h"
#include "dattn/models/hunyuanvideo15_vae.h"

namespace dattn {
namespace {

using i64 = std::int64_t;
constexpr std::string_view kWhat = "the HunyuanVideo-1.5 VAE decode memory estimate";

i64 mul(std::initializer_list<i64> factors) {
  i64 n = 1;
  for (i64 f : factors) n = checked_mul(n, f, kWhat);
  return n;
}

// Accumulates the caches and the widest step, conv by conv, at the resolution each runs at.
struct Tally {
  i64 caches = 0, working = 0;
  // A 3x3x3 causal conv over frames of h x w: its cache is 2 input frames; one call holds the input frame,
  // its norm, the padded 3-frame stream (CUDA), the output frame and the residual beside them.
  void conv(i64 h, i64 w, i64 cin, i64 cout) {
    caches = checked_add(caches, mul({2, h, w, cin, 4}), kWhat);
    const i64 frame_in = mul({h, w, cin, 4}), stream = mul({3, h + 2, w + 2, cin, 4});
    const i64 step = frame_in * 2 + stream + mul({h, w, cout, 4}) + mul({h, w, std::max(cin, cout), 4});
    working = std::max(working, step);
  }
  void resnet(i64 h, i64 w, i64 in, i64 out) {
    conv(h, w, in, out);
    conv(h, w, out, out);
  }
};

}  // namespace

HunyuanVideo15VaeMemory hunyuanvideo15_vae_decode_memory(const HunyuanVideo15VaeConfig& c, const Shape& z) {
  const Shape video = c.video_shape(z);
  HunyuanVideo15VaeMemory m;
  for (const ParamSpec& p : hunyuanvideo15_vae_decoder_manifest(c))
    m.weights = checked_add(m.weights, mul({shape_numel(p.shape), 4}), kWhat);
  m.video = mul({video[0], video[1], video[2], video[3], video[4], 4});

  const std::vector<int> dec = c.decoder_channels();
  i64 h = z[3], w = z[4];
  Tally t;
  t.conv(h, w, c.latent_channels, dec[0]);
  t.resnet(h, w, dec[0], dec[0]);
  t.resnet(h, w, dec[0], dec[0]);
  // The attention: keys and values of every latent frame, the values transposed up to the current frame,
  // and one block of scores with its softmax (each at most AttentionBlock's 256 MiB).
  const i64 pixels = h * w, keys = mul({z[2], pixels});
  m.attention_cache = mul({3, keys, dec[0], 4});
  const i64 scores = std::min(mul({pixels, keys, 4}), i64{256} << 20);
  t.working = std::max(t.working, 2 * scores + mul({4, pixels, dec[0], 4}));
  i64 in = dec[0], held = 0;
  for (int i = 0; i < static_cast<int>(dec.size()); ++i) {
    for (int j = 0; j <= c.layers_per_block; ++j, in = dec[i]) t.resnet(h, w, in, dec[i]);
    if (!c.spatial_upsample(i)) continue;
    const i64 up = c.upsample_match_channel ? dec[i + 1] : dec[i], ft = c.temporal_upsample(i) ? 2 : 1;
    t.conv(h, w, dec[i], 4 * ft * up);
    h *= 2, w *= 2;
    // Depth first, each up block's result (ft frames at the new size) stays alive while its frames go on
    // through the later stages one by one.
    held = checked_add(held, mul({ft, h, w, up, 4}), kWhat);
    in = up;
  }
  t.conv(h, w, dec.back(), c.out_channels);
  m.frame_caches = t.caches;
  m.working = checked_add(t.working, held, kWhat);
  return m;
}

}  // namespace dattn
