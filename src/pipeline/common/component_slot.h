#pragma once
// One component of a pipeline (text encoder, transformer, VAE) under the pipeline's Residency policy:
// acquire() hands it out for a stage, loading it when it is not in memory (and recording "load NAME" in
// the stage times); PerStage lets it go when the stage drops its handle, Resident keeps it. On CUDA the
// load counts until its weights are on the device: uploads are queued (core/upload.h), and their tail
// would otherwise show in the next stage's time.
//
// load_ahead() starts the load early, on a thread bound to a context of its own (load_ahead.h): on CUDA
// its own stream and staging ring, so its copies neither queue behind nor delay the running stage's
// kernels. acquire() then waits for it; "load NAME" is the time waited, and the load's own duration goes
// to the report's loaded_ahead_ms. A load that failed throws from acquire(), in the stage that needs it.
// A slot's `prepare` runs there too, after the load and only on that thread: work that makes the
// component's first use faster without changing what it computes (a VAE's small decode that loads its
// CUDA kernels), done beside the running stage instead of inside its own.
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dattn/core/device.h"
#include "dattn/core/run_context.h"
#include "dattn/pipeline/pipeline.h"
#include "pipeline/common/stage_clock.h"

namespace dattn::pipeline {

template <class T>
class ComponentSlot {
 public:
  using Loader = std::function<std::unique_ptr<T>()>;
  using Prepare = std::function<void(T&)>;
  using Times = std::vector<std::pair<std::string, double>>;
  ComponentSlot() = default;
  ComponentSlot(std::string name, Residency residency, Device device, Loader load, Prepare prepare = {})
      : name_(std::move(name)), residency_(residency), device_(device), load_(std::move(load)),
        prepare_(std::move(prepare)) {}
  ComponentSlot(ComponentSlot&&) noexcept = default;
  ComponentSlot& operator=(ComponentSlot&&) noexcept = default;
  // A load still running is waited for (its thread uses this slot's loader).
  ~ComponentSlot() { drop_ahead(); }

  // `ahead_ms` receives the duration of a load that ran ahead (nullptr: not recorded).
  std::shared_ptr<T> acquire(Times& stage_ms, Times* ahead_ms = nullptr) {
    if (resident_) return resident_;
    StageClock clock;
    std::shared_ptr<T> component;
    if (ahead_.valid()) {
      Ahead done = ahead_.get();  // rethrows the load's error
      component = std::move(done.component);
      if (ahead_ms) ahead_ms->emplace_back("load " + name_, done.ms);
    } else {
      component = load_();
      if (device_ == Device::CUDA) current_context(Device::CUDA).synchronize();
    }
    stage_ms.emplace_back("load " + name_, clock.ms());
    if (residency_ == Residency::Resident) resident_ = component;
    return component;
  }

  // Starts loading on a thread bound to `loader` unless the component is resident or already loading.
  // `user` is the context whose stream will read the weights: the component's buffers are freed on the
  // loader's stream, so it is released only once `user`'s queued work is done.
  void load_ahead(std::shared_ptr<RunContext> loader, std::shared_ptr<RunContext> user) {
    if (resident_ || ahead_.valid()) return;
    // The loader by value: the slot may be moved while the thread runs.
    ahead_ = std::async(std::launch::async, [load = load_, prepare = prepare_, loader = std::move(loader),
                                             user = std::move(user)] {
      const ContextScope bound(*loader);
      StageClock clock;
      std::unique_ptr<T> loaded = load();
      if (prepare) prepare(*loaded);
      loader->synchronize();  // its uploads and conversions are done before another stream reads them
      const double ms = clock.ms();
      std::shared_ptr<T> component(loaded.release(), [user](T* p) {
        try {
          user->synchronize();
        } catch (...) {  // a failed stream was reported by the work that failed; a deleter must not throw
        }
        delete p;
      });
      return Ahead{std::move(component), ms};
    });
  }

  // Whether a load ahead was started and not yet handed out.
  bool loading_ahead() const { return ahead_.valid(); }

 private:
  struct Ahead {
    std::shared_ptr<T> component;
    double ms = 0;
  };

  void drop_ahead() noexcept {
    if (!ahead_.valid()) return;
    try {
      ahead_.get();  // joins the thread; a loaded component is released here
    } catch (...) {  // nobody asked for it: its error has no stage to fail
    }
  }

  std::string name_;
  Residency residency_ = Residency::PerStage;
  Device device_ = Device::CPU;
  Loader load_;
  Prepare prepare_;
  std::shared_ptr<T> resident_;
  std::future<Ahead> ahead_;
};

}  // namespace dattn::pipeline
