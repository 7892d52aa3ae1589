#include "support/device_case.h"

#include <cstring>
#include <exception>

#include "dattn/core/device.h"
#include "dattn/core/dtype.h"

namespace dattn::test {
namespace {

DeviceBuffer upload(const void* host, std::size_t bytes) {
  DeviceBuffer buf(bytes);
  if (bytes) buf.upload(host, bytes);
  return buf;
}

}  // namespace

std::string cuda_unavailable_reason() {
  if (!built_with_cuda()) return "dattn was built without CUDA";
  if (cuda_device_count() == 0) return "no CUDA device is visible";
  return {};
}

DeviceProblem::DeviceProblem(const AttentionProblem& host, std::uint8_t poison) : p_(host) {
  const AttentionShape& s = host.shape;
  const std::size_t es = dtype_size(s.dtype);
  const std::size_t q_bytes = std::size_t(s.batch * s.seq_q * s.heads_q * s.head_dim) * es;
  const std::size_t kv_bytes = std::size_t(s.batch * s.seq_k * s.heads_kv * s.head_dim) * es;
  q_ = upload(host.q, q_bytes);
  k_ = upload(host.k, kv_bytes);
  v_ = upload(host.v, kv_bytes);
  p_.q = q_.get();
  p_.k = k_.get();
  p_.v = v_.get();
  if (host.key_mask) {
    key_mask_ = upload(host.key_mask, std::size_t(s.batch * s.seq_k));
    p_.key_mask = static_cast<const std::uint8_t*>(key_mask_.get());
  }
  if (host.mask) {
    const std::size_t elem = host.mask->type == GeneralMaskType::Boolean ? 1 : sizeof(float);
    mask_ = upload(host.mask->data, std::size_t(s.batch * host.mask->heads * s.seq_q * s.seq_k) * elem);
    p_.mask->data = mask_.get();
  }
  out_bytes_ = q_bytes;
  out_ = DeviceBuffer(out_bytes_ + 2 * kGuard);
  out_.fill(kSentinel);
  const std::vector<std::uint8_t> payload(out_bytes_, poison);
  out_.upload(payload.data(), out_bytes_, kGuard);
  p_.out = static_cast<std::uint8_t*>(out_.get()) + kGuard;
  p_.stream = nullptr;
}

std::size_t DeviceProblem::download(void* payload) const {
  std::vector<std::uint8_t> all(out_.bytes());
  out_.download(all.data(), all.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < kGuard; ++i) {
    bad += all[i] != kSentinel;
    bad += all[kGuard + out_bytes_ + i] != kSentinel;
  }
  std::memcpy(payload, all.data() + kGuard, out_bytes_);
  return bad;
}

std::string run_case_on_cuda(const AttentionBackend& be, AttentionCase& c, const nlohmann::json& extra,
                             std::uint8_t poison) {
  try {
    const DeviceProblem dp(c.problem(), poison);
    dp.problem().validate();
    be.run(dp.problem(), extra_with_defaults(be, extra), Device::CUDA);
    check_device("attention kernel");  // launch and execution errors, named
    if (std::size_t bad = dp.download(c.out.data()))
      return std::to_string(bad) + " guard bytes around the device output were overwritten";
  } catch (const std::exception& e) {
    return std::string("run threw: ") + e.what();
  }
  return {};
}

}  // namespace dattn::test
