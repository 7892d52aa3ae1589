// Loading a Wan transformer checkpoint: every way a checkpoint can be wrong gets an error naming the
// file and the tensor, never a crash; and an attention backend that cannot run the model fails the build.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "dattn/io/safetensors_writer.h"
#include "models/wan_golden.h"
#include "ops/op_test_util.h"
#include "support/config_error.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

// A copy of the golden transformer directory with its tensors edited by `edit` before writing.
std::string edited_checkpoint(const std::string& tag, const std::function<void(std::vector<WrittenTensor>&)>& edit) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("wan_ckpt_" + tag + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(wan_tiny_transformer_dir() + "/config.json", dir / "config.json");
  SafetensorsFile src(wan_tiny_transformer_dir() + "/diffusion_pytorch_model.safetensors");
  std::vector<WrittenTensor> tensors;
  for (const auto& [name, info] : src.tensors()) {
    const std::uint8_t* p = src.data(name);
    tensors.push_back({name, info.dtype, info.shape, std::vector<std::uint8_t>(p, p + (info.end - info.begin))});
  }
  edit(tensors);
  write_safetensors((dir / "diffusion_pytorch_model.safetensors").string(), tensors);
  return dir.string();
}

std::string load_error(const std::string& dir) {
  return user_error([&] { WanTransformer::load(dir, {}); });
}

void drop(std::vector<WrittenTensor>& ts, const std::string& name) {
  std::erase_if(ts, [&](const WrittenTensor& t) { return t.name == name; });
}

TEST(WanLoad, MissingAndUnexpectedTensorsAreListedTogether) {
  const std::string dir = edited_checkpoint("names", [](auto& ts) {
    drop(ts, "blocks.1.ffn.net.2.bias");
    drop(ts, "scale_shift_table");
    ts.push_back({"blocks.2.attn1.to_q.weight", "F32", {1}, std::vector<std::uint8_t>(4)});
    ts.push_back({"blocks.0.attn2.norm_added_q.weight", "F32", {1}, std::vector<std::uint8_t>(4)});  // ignored, as diffusers
  });
  EXPECT_EQ(load_error(dir), dir + ": the weights do not match config.json (WanTransformer3DModel): 2 missing: "
                                  "blocks.1.ffn.net.2.bias, scale_shift_table; 1 unexpected: "
                                  "blocks.2.attn1.to_q.weight; is config.json the one these weights were saved with?");
}

TEST(WanLoad, WrongShapeNamesFileTensorAndShapes) {
  const std::string dir = edited_checkpoint("shape", [](auto& ts) {
    for (auto& t : ts)
      if (t.name == "proj_out.bias") t.shape = {2, 16};
  });
  EXPECT_EQ(load_error(dir), dir + "/diffusion_pytorch_model.safetensors: tensor 'proj_out.bias' has shape [2,16], "
                                  "expected [32]");
}

TEST(WanLoad, UnknownDtypeNamesTheTensor) {
  const std::string dir = edited_checkpoint("dtype", [](auto& ts) {
    for (auto& t : ts)
      if (t.name == "blocks.0.norm2.bias") t.dtype = "I32";
  });
  EXPECT_EQ(load_error(dir), dir + "/diffusion_pytorch_model.safetensors: tensor 'blocks.0.norm2.bias' has dtype I32; "
                                  "expected F32, BF16, F16 or F64");
}

TEST(WanLoad, TruncatedFileNamesTheFile) {
  const std::string dir = edited_checkpoint("truncated", [](auto&) {});
  const fs::path file = fs::path(dir) / "diffusion_pytorch_model.safetensors";
  fs::resize_file(file, fs::file_size(file) - 1000);
  const std::string msg = load_error(dir);
  EXPECT_EQ(msg.rfind(file.string() + ": ", 0), 0u) << msg;
}

TEST(WanLoad, MissingWeightsFileAndConfig) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("wan_ckpt_empty_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_EQ(load_error(dir.string()), dir.string() + "/config.json: cannot open (is '" + dir.string() +
                                          "' a diffusers model directory?)");
  fs::copy_file(wan_tiny_transformer_dir() + "/config.json", dir / "config.json");
  EXPECT_EQ(load_error(dir.string()), "'" + dir.string() + "' has 0 *.safetensors files and no index; expected exactly "
                                      "one weights file or an index");
}

TEST(WanLoad, ExplicitBackendThatCannotRunIsABuildError) {
  WanRunOptions o;
  o.attention.config = AttentionConfig::from_json_string(R"({"per_role":{"cross":"SAGE_ATTN"}})");
  EXPECT_EQ(config_error([&] { WanTransformer::load(wan_tiny_transformer_dir(), o); }),
            "SAGE_ATTN cannot run role 'cross' (blocks.0.attn2): dtype fp32 not in {bf16, fp16}. Backends that can: "
            "FLASH_ATTN, TORCH_SDPA, SPARSE_BLOCK");
  o.dtype = DType::BF16;  // head dim 64 in bf16: SAGE_ATTN can
  const WanTransformer m = WanTransformer::load(wan_tiny_transformer_dir(), o);
  EXPECT_EQ(m.options().dtype, DType::BF16);
}

}  // namespace
}  // namespace dattn::testing
