#pragma once
// A pipeline's CUDA library state (cuBLASLt, cuDNN: ops/cuda_libraries.h; TORCH_SDPA's GEMMs:
// attention/cuda_warmup.h) made on a thread of its own while the components load, instead of inside
// the first text encode and the first VAE decode; and the VAE's own warm-up, run beside the denoising
// when it loads ahead.
#include <memory>
#include <thread>
#include <utility>

#include "dattn/core/device.h"
#include "dattn/core/run_context.h"

namespace dattn::pipeline {

// A thread joined when destroyed or replaced (std::jthread without a stop token: libc++ 14 lacks it).
class JoiningThread {
 public:
  JoiningThread() = default;
  explicit JoiningThread(std::thread t) : thread_(std::move(t)) {}
  JoiningThread(JoiningThread&&) noexcept = default;
  JoiningThread& operator=(JoiningThread&& other) noexcept {
    join();
    thread_ = std::move(other.thread_);
    return *this;
  }
  ~JoiningThread() { join(); }

 private:
  void join() noexcept {
    if (thread_.joinable()) thread_.join();
  }
  std::thread thread_;
};

// The thread making it, bound to `context` (keep it in a member declared after everything the loads
// use, so that it is joined first); nothing for a CPU context. A failure there is left to the first op
// that needs the state: it makes it again and reports its own error.
JoiningThread prepare_libraries_in_background(const std::shared_ptr<RunContext>& context);

// A VAE slot's `prepare` (ComponentSlot): its warm_up() on CUDA, where the first use of each kernel costs
// time, beside the running stage; nothing on the CPU.
template <class Vae>
void warm_up_vae_on_cuda(Vae& vae) {
  if (vae.device() == Device::CUDA) vae.warm_up();
}

}  // namespace dattn::pipeline
