// hunyuanvideo15_vae_decoder_manifest: the decoder's checkpoint layout, written out independently of the
// layer classes (which read the same names) so that a test can compare the two and make-checkpoint can
// write weights.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dattn/models/hunyuanvideo15_vae.h"

namespace dattn {
namespace {

using List = std::vector<ParamSpec>;

// The VAE computes in float32 whatever the checkpoint dtype asked for: every tensor is kept in it.
void add(List& out, const std::string& name, Shape shape, ParamKind kind) {
  out.push_back({name, std::move(shape), kind, /*keep_fp32=*/true});
}

void conv(List& out, const std::string& name, std::int64_t cin, std::int64_t cout, std::int64_t k) {
  add(out, name + ".weight", Shape{cout, cin, k, k, k}, ParamKind::Weight);
  add(out, name + ".bias", Shape{cout}, ParamKind::Bias);
}

void gamma(List& out, const std::string& name, std::int64_t dim) {
  add(out, name + ".gamma", Shape{dim, 1, 1, 1}, ParamKind::NormWeight);
}

// HunyuanVideo15ResnetBlock: its causal convs hold their nn.Conv3d as `.conv`; the shortcut is a plain one.
void resnet(List& out, const std::string& name, std::int64_t in, std::int64_t dim) {
  gamma(out, name + ".norm1", in);
  conv(out, name + ".conv1.conv", in, dim, 3);
  gamma(out, name + ".norm2", dim);
  conv(out, name + ".conv2.conv", dim, dim, 3);
  if (in != dim) conv(out, name + ".conv_shortcut", in, dim, 1);
}

}  // namespace

List hunyuanvideo15_vae_decoder_manifest(const HunyuanVideo15VaeConfig& c) {
  List out;
  const std::vector<int> dec = c.decoder_channels();
  conv(out, "decoder.conv_in.conv", c.latent_channels, dec[0], 3);
  resnet(out, "decoder.mid_block.resnets.0", dec[0], dec[0]);
  const std::string attn = "decoder.mid_block.attentions.0";
  gamma(out, attn + ".norm", dec[0]);
  for (const char* n : {".to_q", ".to_k", ".to_v", ".proj_out"}) conv(out, attn + n, dec[0], dec[0], 1);
  resnet(out, "decoder.mid_block.resnets.1", dec[0], dec[0]);
  std::int64_t in = dec[0];
  for (int i = 0; i < static_cast<int>(dec.size()); ++i) {
    const std::string block = "decoder.up_blocks." + std::to_string(i);
    const std::int64_t dim = dec[i];
    for (int j = 0; j <= c.layers_per_block; ++j, in = dim)
      resnet(out, block + ".resnets." + std::to_string(j), in, dim);
    if (!c.spatial_upsample(i)) continue;
    const std::int64_t up = c.upsample_match_channel ? dec[i + 1] : dim;
    conv(out, block + ".upsamplers.0.conv.conv", dim, up * 4 * (c.temporal_upsample(i) ? 2 : 1), 3);
    in = up;
  }
  gamma(out, "decoder.norm_out", dec.back());
  conv(out, "decoder.conv_out.conv", dec.back(), c.out_channels, 3);
  return out;
}

}  // namespace dattn
