#pragma once
// One component of a pipeline (text encoder, transformer, VAE) under the pipeline's Residency policy:
// acquire() hands it out for a stage, loading it when it is not in memory (and recording "load NAME" in
// the stage times); PerStage lets it go when the stage drops its handle, Resident keeps it. On CUDA the
// load counts until its weights are on the device: uploads are queued (core/upload.h), and their tail
// would otherwise show in the next stage's time.
#include <functional>
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
  ComponentSlot() = default;
  ComponentSlot(std::string name, Residency residency, Device device, Loader load)
      : name_(std::move(name)), residency_(residency), device_(device), load_(std::move(load)) {}

  std::shared_ptr<T> acquire(std::vector<std::pair<std::string, double>>& stage_ms) {
    if (resident_) return resident_;
    StageClock clock;
    std::shared_ptr<T> component = load_();
    if (device_ == Device::CUDA) current_context(Device::CUDA).synchronize();
    stage_ms.emplace_back("load " + name_, clock.ms());
    if (residency_ == Residency::Resident) resident_ = component;
    return component;
  }

 private:
  std::string name_;
  Residency residency_ = Residency::PerStage;
  Device device_ = Device::CPU;
  Loader load_;
  std::shared_ptr<T> resident_;
};

}  // namespace dattn::pipeline
