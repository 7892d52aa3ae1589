// WeightStore::take onto CUDA (skipped without a GPU): through the pinned staging ring and the GPU
// conversions, every stored x wanted dtype gives the bits a host take gives, many small tensors and a
// few larger than a staging buffer alike, with the same shape and name errors, store after store.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/core/tensor.h"
#include "dattn/core/upload.h"
#include "dattn/io/safetensors_writer.h"
#include "dattn/io/weight_store.h"
#include "support/device_case.h"

namespace dattn {
namespace {
namespace fs = std::filesystem;

struct Stored {
  std::string name, dtype;
  Shape shape;
};

// Random values (a normal spread, with a NaN, an Inf and a subnormal among them) stored in `dtype`.
WrittenTensor random_tensor(const Stored& s, std::mt19937_64& rng) {
  const DType dt = s.dtype == "F32" ? DType::F32 : s.dtype == "BF16" ? DType::BF16 : DType::F16;
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(s.shape)));
  for (float& x : v) x = n(rng);
  if (v.size() > 3) v[0] = NAN, v[1] = -INFINITY, v[2] = 1e-41f;
  const Tensor t = Tensor::from_f32(v, s.shape, dt);
  WrittenTensor w{s.name, s.dtype, s.shape, {}};
  w.bytes.resize(t.bytes());
  std::memcpy(w.bytes.data(), t.data(), t.bytes());
  return w;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.to(Device::CPU), y = b.to(Device::CPU);
  return std::memcmp(x.data(), y.data(), x.bytes()) == 0;
}

class WeightStoreCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dattn_io_cuda_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file of 300 small tensors of odd shapes and three larger than a staging buffer, each dtype among them.
  std::vector<Stored> write_file(const std::string& file, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const char* dtypes[] = {"F32", "BF16", "F16"};
    std::vector<Stored> specs;
    for (int i = 0; i < 300; ++i)
      specs.push_back({"small." + std::to_string(i), dtypes[i % 3],
                       {1 + static_cast<std::int64_t>(rng() % 37), 1 + static_cast<std::int64_t>(rng() % 53)}});
    const std::int64_t big = static_cast<std::int64_t>(kUploadBufferBytes / 2);  // elements: 1-2 buffers of bytes
    specs.push_back({"large.f32", "F32", {3, big / 3 + 1}});
    specs.push_back({"large.bf16", "BF16", {big + 7}});
    specs.push_back({"large.f16", "F16", {5, big / 2 + 3}});
    std::vector<WrittenTensor> tensors;
    for (const Stored& s : specs) tensors.push_back(random_tensor(s, rng));
    write_safetensors((dir_ / file).string(), tensors);
    return specs;
  }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }

  fs::path dir_;
};

TEST_F(WeightStoreCuda, EveryDtypePairGivesTheHostTakesBits) {
  DATTN_SKIP_WITHOUT_CUDA();
  const std::vector<Stored> specs = write_file("w.safetensors", 1);
  WeightStore host(std::vector<std::string>{path("w.safetensors")});
  WeightStore cuda(std::vector<std::string>{path("w.safetensors")});
  for (DType want : {DType::F32, DType::BF16, DType::F16}) {
    std::vector<Tensor> on_device;  // all queued before any is read back
    for (const Stored& s : specs) on_device.push_back(cuda.take(s.name, want, Device::CUDA, s.shape));
    for (std::size_t i = 0; i < specs.size(); ++i) {
      SCOPED_TRACE(specs[i].name + " " + specs[i].dtype + " -> " + std::string(dtype_name(want)));
      ASSERT_EQ(on_device[i].device(), Device::CUDA);
      ASSERT_TRUE(same_bits(on_device[i], host.take(specs[i].name, want, Device::CPU, specs[i].shape)));
    }
  }
  EXPECT_TRUE(cuda.unused().empty());
}

TEST_F(WeightStoreCuda, ShapeAndNameErrorsAreTheHostOnes) {
  DATTN_SKIP_WITHOUT_CUDA();
  write_file("w.safetensors", 2);
  WeightStore store(std::vector<std::string>{path("w.safetensors")});
  auto message = [&](Device device, const std::string& name, const Shape& shape) {
    try {
      store.take(name, DType::BF16, device, shape);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string wrong_shape = message(Device::CPU, "large.bf16", {2, 3});
  EXPECT_NE(wrong_shape.find("tensor 'large.bf16' has shape"), std::string::npos) << wrong_shape;
  EXPECT_EQ(message(Device::CUDA, "large.bf16", {2, 3}), wrong_shape);
  const std::string missing = message(Device::CPU, "no.such.tensor", {});
  EXPECT_NE(missing.find("not found"), std::string::npos) << missing;
  EXPECT_EQ(message(Device::CUDA, "no.such.tensor", {}), missing);
}

TEST_F(WeightStoreCuda, StoreAfterStoreReusesTheContextsStaging) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto context = RunContext::create(Device::CUDA, 0);
  const ContextScope bound(*context);
  std::size_t bytes_before = 0;
  for (int round = 0; round < 3; ++round) {  // three components' loads, each from its own store
    std::string file = "w";  // built with +=: GCC 12 warns falsely (-Wrestrict) on "literal" + temporary
    (file += std::to_string(round)) += ".safetensors";
    const std::vector<Stored> specs = write_file(file, 10 + round);
    std::vector<Tensor> loaded;
    {
      WeightStore store(std::vector<std::string>{path(file)});
      for (const Stored& s : specs) loaded.push_back(store.take(s.name, DType::BF16, Device::CUDA, s.shape));
    }  // the store (and its mapping) is gone; the tensors stay whole
    WeightStore again(std::vector<std::string>{path(file)});
    for (std::size_t i = 0; i < specs.size(); ++i)
      ASSERT_TRUE(same_bits(loaded[i], again.take(specs[i].name, DType::BF16, Device::CPU, specs[i].shape)))
          << specs[i].name;
    const UploadStats s = upload_stats();
    EXPECT_TRUE(s.staging_made);
    EXPECT_GT(s.bytes, bytes_before) << "one ring for the context, counting every store's bytes";
    EXPECT_GT(s.reuses, 0u);
    bytes_before = s.bytes;
  }
}

}  // namespace
}  // namespace dattn
