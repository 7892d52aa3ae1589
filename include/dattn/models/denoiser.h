#pragma once
// The interface the shared denoise loop (pipeline layer) drives: a model that predicts the flow velocity
// of latents at a timestep under its conditioning. Every model family's transformer implements it
// (Wan: WanTransformer; HunyuanVideo-1.5 next), so the loop, the guidance strategies and the schedulers
// are written once.
#include <map>
#include <string>
#include <vector>

#include "dattn/attention/selector.h"
#include "dattn/core/tensor.h"

namespace dattn {

// A model's conditioning inputs for one forward, by name (Wan: "encoder_hidden_states"; masks and
// further encoders for other families). Every tensor has the batch as dimension 0, so two conditionings
// combine into one batch generically (concat_batch).
struct Conditioning {
  std::map<std::string, Tensor> tensors;

  // The tensor called `name`; UserError naming the missing input and the ones present.
  const Tensor& at(const std::string& name) const;
};

// [a; b] along dimension 0 for every name (both must hold the same names, shapes equal past dimension
// 0, same dtypes and devices): the conditional and unconditional inputs of a batched guidance forward.
Conditioning concat_batch(const Conditioning& a, const Conditioning& b);
// [a; b] along dimension 0 for two tensors of one dtype and device, equal past dimension 0.
Tensor concat_batch(const Tensor& a, const Tensor& b);

class Denoiser {
 public:
  virtual ~Denoiser() = default;

  // latents [B, C, F, H, W] on the run device (any float dtype), the timestep t of the scheduler, and a
  // conditioning of batch B. Returns the predicted velocity [B, C, F, H, W] as float32 on the latents'
  // device. Throws UserError for inputs that do not fit the model.
  virtual Tensor predict(const Tensor& latents, double timestep, const Conditioning& conditioning) const = 0;

  // The backend each attention role of the model resolved to when it was built, one entry per role.
  virtual std::vector<Resolution> attention_resolutions() const = 0;
};

}  // namespace dattn
