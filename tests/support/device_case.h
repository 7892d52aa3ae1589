#pragma once
// Test support for running attention on Device::CUDA: a host problem's tensors and masks copied to
// device memory, and an output buffer in device memory with guard regions around a NaN-poisoned
// payload (the device twin of GuardedOutput). Uses DeviceBuffer, which throws in a build without
// CUDA: check built_with_cuda() and cuda_device_count() before constructing one.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/attention/backend.h"
#include "dattn/attention/problem.h"
#include "dattn/core/device_memory.h"
#include "support/attention_cases.h"

namespace dattn::test {

// Why a CUDA test cannot run here ("" when it can): no CUDA in this build, or no visible device.
std::string cuda_unavailable_reason();

// Skips the current GoogleTest test, saying why, when cuda_unavailable_reason() is not empty.
#define DATTN_SKIP_WITHOUT_CUDA()                                                   \
  do {                                                                              \
    const std::string dattn_no_cuda_ = ::dattn::test::cuda_unavailable_reason();    \
    if (!dattn_no_cuda_.empty()) GTEST_SKIP() << "no CUDA: " << dattn_no_cuda_;     \
  } while (0)

class DeviceProblem {
 public:
  static constexpr std::size_t kGuard = GuardedOutput::kGuard;
  static constexpr std::uint8_t kSentinel = GuardedOutput::kSentinel;

  // Copies host's q, k, v, key_mask and general mask data (sizes from host.shape) to the device and
  // allocates out as one buffer of guard + payload + guard bytes: guards 0xA5, payload `poison` bytes
  // (0xFF: NaN; the non-finite cases use a finite poison, so that an unwritten element cannot pass for
  // an expected NaN). key_lengths, scale and the mask's type and heads are kept as they are (host side).
  explicit DeviceProblem(const AttentionProblem& host, std::uint8_t poison = 0xFF);
  const AttentionProblem& problem() const { return p_; }

  // Downloads the whole output buffer; returns the number of guard bytes that changed and copies
  // the payload into `payload` (out bytes of the host problem's shape).
  std::size_t download(void* payload) const;

 private:
  DeviceBuffer q_, k_, v_, key_mask_, mask_, out_;
  std::size_t out_bytes_ = 0;
  AttentionProblem p_;
};

// Runs `be` on CUDA on a device copy of c.problem() with `extra` (defaults filled in), waits for it,
// and downloads the output into c.out's payload. Returns "" on success, else what went wrong (an
// exception from the run or the device, or overwritten guard bytes); check_output() then checks the
// rest (NaN/Inf, fully masked rows, errors).
std::string run_case_on_cuda(const AttentionBackend& be, AttentionCase& c, const nlohmann::json& extra,
                             std::uint8_t poison = 0xFF);

}  // namespace dattn::test
