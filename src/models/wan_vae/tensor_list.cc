// wan_vae_decoder_tensors: the decoder's checkpoint layout, written out independently of the layer
// classes (which read the same names) so that a test can compare the two and a tool can write weights.
#include <string>

#include "dattn/models/wan_vae.h"
#include "models/wan_vae/decoder.h"

namespace dattn {
namespace {

using List = std::vector<std::pair<std::string, Shape>>;

void conv(List& out, const std::string& name, std::int64_t cin, std::int64_t cout, Shape kernel) {
  Shape w = {cout, cin};
  w.insert(w.end(), kernel.begin(), kernel.end());
  out.emplace_back(name + ".weight", w);
  out.emplace_back(name + ".bias", Shape{cout});
}

void resnet(List& out, const std::string& name, std::int64_t in, std::int64_t dim) {
  out.emplace_back(name + ".norm1.gamma", Shape{in, 1, 1, 1});
  conv(out, name + ".conv1", in, dim, {3, 3, 3});
  out.emplace_back(name + ".norm2.gamma", Shape{dim, 1, 1, 1});
  conv(out, name + ".conv2", dim, dim, {3, 3, 3});
  if (in != dim) conv(out, name + ".conv_shortcut", in, dim, {1, 1, 1});
}

}  // namespace

List wan_vae_decoder_tensors(const WanVaeConfig& c) {
  List out;
  const std::vector<int> widths = wan_vae::decoder_dims(c);
  const std::vector<std::int64_t> dims(widths.begin(), widths.end());
  const std::vector<bool> temporal = c.temporal_upsample();

  conv(out, "post_quant_conv", c.z_dim, c.z_dim, {1, 1, 1});
  conv(out, "decoder.conv_in", c.z_dim, dims[0], {3, 3, 3});
  resnet(out, "decoder.mid_block.resnets.0", dims[0], dims[0]);
  const std::string attn = "decoder.mid_block.attentions.0";
  out.emplace_back(attn + ".norm.gamma", Shape{dims[0], 1, 1});
  conv(out, attn + ".to_qkv", dims[0], 3 * dims[0], {1, 1});
  conv(out, attn + ".proj", dims[0], dims[0], {1, 1});
  resnet(out, "decoder.mid_block.resnets.1", dims[0], dims[0]);

  const std::size_t stages = c.dim_mult.size();
  for (std::size_t i = 0; i < stages; ++i) {
    const std::string block = "decoder.up_blocks." + std::to_string(i);
    std::int64_t in = (i > 0 && !c.is_residual) ? dims[i] / 2 : dims[i];
    const std::int64_t dim = dims[i + 1];
    for (int j = 0; j <= c.num_res_blocks; ++j, in = dim) resnet(out, block + ".resnets." + std::to_string(j), in, dim);
    if (i + 1 == stages) continue;
    const std::string up = block + (c.is_residual ? ".upsampler" : ".upsamplers.0");
    conv(out, up + ".resample.1", dim, c.is_residual ? dim : dim / 2, {3, 3});
    if (temporal[i]) conv(out, up + ".time_conv", dim, 2 * dim, {3, 1, 1});
  }
  out.emplace_back("decoder.norm_out.gamma", Shape{dims.back(), 1, 1, 1});
  conv(out, "decoder.conv_out", dims.back(), c.out_channels, {3, 3, 3});
  return out;
}

}  // namespace dattn
