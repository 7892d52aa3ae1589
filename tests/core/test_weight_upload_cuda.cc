// The pinned staging uploads of core/upload.h on CUDA (skipped without a GPU): bytes of odd sizes, many
// small and a few larger than a staging buffer, in flight together; dtype conversions on the GPU bit for
// bit against the host's (Tensor::to(dtype), dtype.cc); a source freed right after the call; the ring
// kept per context across loads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dattn/core/device_memory.h"
#include "dattn/core/dtype.h"
#include "dattn/core/run_context.h"
#include "dattn/core/tensor.h"
#include "dattn/core/upload.h"
#include "support/device_case.h"

namespace dattn {
namespace {

// A host tensor whose bytes are `bits` (element size of dtype).
Tensor host_from_bits(const void* bits, std::int64_t n, DType dtype) {
  Tensor t = Tensor::empty({n}, dtype);
  std::memcpy(t.data(), bits, t.bytes());
  return t;
}

Tensor random_bits(std::int64_t n, DType dtype, std::mt19937_64& rng) {
  Tensor t = Tensor::empty({n}, dtype);
  auto* p = static_cast<std::uint8_t*>(t.data());
  for (std::size_t i = 0; i < t.bytes(); ++i) p[i] = static_cast<std::uint8_t>(rng());
  return t;
}

// "" when equal, else the first differing element (index and both values as hex).
std::string first_difference(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return "got " + got.describe() + ", expected " + want.describe();
  const Tensor g = got.to(Device::CPU), w = want.to(Device::CPU);
  const std::size_t es = dtype_size(w.dtype()), n = static_cast<std::size_t>(w.numel());
  const auto* a = static_cast<const std::uint8_t*>(g.data());
  const auto* b = static_cast<const std::uint8_t*>(w.data());
  if (std::memcmp(a, b, n * es) == 0) return {};
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(a + i * es, b + i * es, es) != 0) {
      std::uint64_t x = 0, y = 0;
      std::memcpy(&x, a + i * es, es);
      std::memcpy(&y, b + i * es, es);
      char buf[96];
      std::snprintf(buf, sizeof buf, "element %zu: got 0x%llx, expected 0x%llx", i, (unsigned long long)x,
                    (unsigned long long)y);
      return buf;
    }
  return {};
}

// Every 16-bit pattern, or for float32: every high half with low halves at the rounding edges, then
// random patterns (NaNs, Infs, subnormals, ties and overflow all among them).
Tensor conversion_sources(DType from) {
  std::vector<std::uint32_t> v;
  if (from != DType::F32) {
    std::vector<std::uint16_t> h(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<std::uint16_t>(i);
    return host_from_bits(h.data(), static_cast<std::int64_t>(h.size()), from);
  }
  std::mt19937_64 rng(23);
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x7FFF, 0x8000, 0x8001, 0xEFFF, 0xF000, 0xFFFF};
  for (std::uint32_t hi = 0; hi < 65536; ++hi)
    for (std::uint32_t lo : lows) v.push_back(hi << 16 | lo);
  for (int i = 0; i < (1 << 20); ++i) v.push_back(static_cast<std::uint32_t>(rng()));
  return host_from_bits(v.data(), static_cast<std::int64_t>(v.size()), DType::F32);
}

TEST(WeightUploadCuda, ConversionsMatchTheHostBitForBit) {
  DATTN_SKIP_WITHOUT_CUDA();
  const DType types[] = {DType::F32, DType::BF16, DType::F16};
  for (DType from : types) {
    const Tensor src = conversion_sources(from);
    for (DType to : types) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      const std::size_t before = upload_stats().conversions;
      const Tensor got = upload_tensor(src, to);
      EXPECT_EQ(got.device(), Device::CUDA);
      EXPECT_EQ(first_difference(got, src.to(to)), "");
      EXPECT_EQ(upload_stats().conversions - before, from == to ? 0u : 1u) << "converted on the GPU";
    }
  }
}

TEST(WeightUploadCuda, F64IsConvertedOnTheHostThenUploaded) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n(0.0, 3.0);
  std::vector<double> v(10001);
  for (double& x : v) x = n(rng);
  const Tensor src = Tensor::from_f64(v, {10001}, DType::F64);
  for (DType to : {DType::F32, DType::BF16, DType::F16})
    EXPECT_EQ(first_difference(upload_tensor(src, to), src.to(to)), "");
}

TEST(WeightUploadCuda, ManySmallAndAFewLargeInFlightTogether) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(7);
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < 600; ++i) sizes.push_back(1 + static_cast<std::int64_t>(rng() % 6000));  // many small
  const std::int64_t buffer = static_cast<std::int64_t>(kUploadBufferBytes);
  // Larger than one buffer, and than the whole ring, at odd sizes; one exactly a buffer.
  for (std::int64_t bytes : {buffer + 3, buffer / 2 * 5 + 1, buffer, 4 * buffer + 4097}) sizes.push_back(bytes);
  for (int i = 0; i < 50; ++i) sizes.push_back(1 + static_cast<std::int64_t>(rng() % 3000));
  std::vector<Tensor> host, device;
  const UploadStats before = upload_stats();
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const DType dt = i % 3 == 0 ? DType::F32 : i % 3 == 1 ? DType::BF16 : DType::I8;
    const std::int64_t n = std::max<std::int64_t>(1, sizes[i] / static_cast<std::int64_t>(dtype_size(dt)));
    host.push_back(random_bits(n, dt, rng));
    device.push_back(upload_tensor(host.back(), dt));  // no wait between: the ring laps several times
    bytes += host.back().bytes();
  }
  const UploadStats after = upload_stats();
  EXPECT_TRUE(after.staging_made);
  EXPECT_EQ(after.bytes - before.bytes, bytes);
  EXPECT_GE(after.copies - before.copies, sizes.size());
  // Every full buffer is left for the next one (waiting for its last DMA): the ring went round twice
  // (the last buffer filled may not have been left yet, hence the - 1).
  EXPECT_GE(after.reuses - before.reuses, bytes / kUploadBufferBytes - 1);
  EXPECT_GE(bytes / kUploadBufferBytes, 2 * kUploadBuffers);
  for (std::size_t i = 0; i < host.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i) + " " + host[i].describe());
    ASSERT_EQ(first_difference(device[i], host[i]), "");
  }
}

TEST(WeightUploadCuda, TheSourceMayBeOverwrittenWhenTheCallReturns) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(11);
  // Larger than the ring: the last pieces are still in flight when the call returns.
  const std::int64_t n = static_cast<std::int64_t>(kUploadBuffers * kUploadBufferBytes / 4) + 12345;
  Tensor src = random_bits(n, DType::F32, rng);
  const Tensor expected = src.clone();
  const Tensor got = upload_tensor(src, DType::F32);
  std::memset(src.data(), 0x5A, src.bytes());  // what a freed, reused mapping would read as
  EXPECT_EQ(first_difference(got, expected), "");
}

TEST(WeightUploadCuda, EachContextKeepsItsRingAcrossLoads) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(13);
  const auto a = RunContext::create(Device::CUDA, 0);
  const auto b = RunContext::create(Device::CUDA, 0);
  {
    const ContextScope bound(*b);
    EXPECT_FALSE(upload_stats().staging_made) << "a new context has no ring before its first upload";
  }
  std::size_t copies = 0, bytes = 0;
  for (int round = 0; round < 3; ++round) {  // three "loads" under the same context
    const ContextScope bound(*a);
    std::vector<Tensor> host, device;
    for (int i = 0; i < 20; ++i) {
      host.push_back(random_bits(1 + static_cast<std::int64_t>(rng() % (3 << 20)), DType::BF16, rng));
      device.push_back(upload_tensor(host.back(), DType::F32));
      bytes += host.back().bytes();
    }
    a->synchronize();
    for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(first_difference(device[i], host[i].to(DType::F32)), "");
    const UploadStats s = upload_stats();
    EXPECT_EQ(s.bytes, bytes) << "round " << round << ": one ring, counting every round";
    EXPECT_GT(s.copies, copies);
    copies = s.copies;
  }
  const ContextScope bound(*b);
  EXPECT_FALSE(upload_stats().staging_made) << "the other context's uploads went through its own ring";
}

// The ring's other direction: downloads of odd sizes below, at and above one buffer and the whole ring,
// each queued right behind uploads through the same ring (no wait between), against the bytes a plain
// cudaMemcpy reads back; Tensor::to(Device::CPU) takes the ring from kDownloadThroughRingBytes on.
TEST(WeightUploadCuda, DownloadsThroughTheRingReadBackEveryByte) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(17);
  const std::int64_t buffer = static_cast<std::int64_t>(kUploadBufferBytes);
  for (std::int64_t bytes : {std::int64_t{1}, buffer - 1, buffer, buffer + 5, 4 * buffer, 9 * buffer + 4099}) {
    SCOPED_TRACE(std::to_string(bytes) + " bytes");
    const Tensor host = random_bits(bytes, DType::I8, rng);
    const Tensor device = upload_tensor(host, DType::I8);
    const Tensor other = upload_tensor(random_bits(3 * buffer + 7, DType::I8, rng), DType::I8);  // still in flight
    std::vector<std::uint8_t> got(static_cast<std::size_t>(bytes), 0xA5);  // poisoned
    const std::size_t before = upload_stats().downloaded_bytes;
    download_bytes(got.data(), device.data(), got.size());
    EXPECT_EQ(upload_stats().downloaded_bytes - before, got.size());
    ASSERT_EQ(std::memcmp(got.data(), host.data(), got.size()), 0);
    std::vector<std::uint8_t> plain(static_cast<std::size_t>(other.bytes()));
    copy_bytes(plain.data(), other.data(), plain.size());  // the upload after it was not disturbed
    const Tensor other_back = other.to(Device::CPU);
    ASSERT_EQ(std::memcmp(plain.data(), other_back.data(), plain.size()), 0);
    const std::size_t via_to = upload_stats().downloaded_bytes;
    const Tensor back = device.to(Device::CPU);
    EXPECT_EQ(upload_stats().downloaded_bytes - via_to,
              static_cast<std::size_t>(bytes) >= kDownloadThroughRingBytes ? got.size() : 0u);
    ASSERT_EQ(std::memcmp(back.data(), host.data(), got.size()), 0);
  }
}

}  // namespace
}  // namespace dattn
