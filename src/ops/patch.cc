// Dispatch of patch embedding and unpatchify, with the geometry checks.
#include "dattn/ops/patch.h"

#include "dattn/core/error.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {
namespace {

std::string patch_str(const Patch3& p) {
  std::string s = "(";  // built with += : GCC 12 warns falsely (-Wrestrict) on "literal" + string
  for (int i = 0; i < 3; ++i) (s += std::to_string(p[i])) += i < 2 ? ", " : ")";
  return s;
}

void require_positive(const char* op, const char* what, const Patch3& p) {
  for (auto v : p)
    if (v < 1) throw UserError(std::string(op) + ": " + what + " " + patch_str(p) + ": expected positive sizes");
}

}  // namespace

Tensor patch_embed_3d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Patch3& patch) {
  constexpr const char* op = "patch_embed_3d";
  require_positive(op, "patch", patch);
  detail::require_float(op, "x", x);
  detail::require_ndim(op, "x", x, 5, "[B, C, F, H, W]");
  for (int i = 0; i < 3; ++i)
    if (x.dim(2 + i) % patch[i] != 0)
      throw UserError(std::string(op) + ": x " + x.describe() + ": frames, height and width must be multiples of the patch " +
                      patch_str(patch));
  detail::require_float(op, "weight", weight);
  detail::require_ndim(op, "weight", weight, 5, "[out, C, pt, ph, pw]");
  detail::require_shape(op, "weight", weight, {weight.dim(0), x.dim(1), patch[0], patch[1], patch[2]});
  detail::require_same_device(op, x, "weight", weight);
  if (bias.defined()) {
    detail::require_float(op, "bias", bias);
    detail::require_shape(op, "bias", bias, {weight.dim(0)});
    detail::require_same_device(op, x, "bias", bias);
  }
  switch (x.device()) {
    case Device::CPU: return cpu::patch_embed_3d(x, weight, bias, patch);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::patch_embed_3d(x, weight, bias, patch);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

Tensor unpatchify_3d(const Tensor& x, const Patch3& grid, const Patch3& patch, std::int64_t channels) {
  constexpr const char* op = "unpatchify_3d";
  require_positive(op, "patch", patch);
  require_positive(op, "grid", grid);
  detail::require_defined(op, "x", x);
  detail::require_ndim(op, "x", x, 3, "[B, S, features]");
  detail::require_shape(op, "x", x, {x.dim(0), grid[0] * grid[1] * grid[2], patch[0] * patch[1] * patch[2] * channels});
  switch (x.device()) {
    case Device::CPU: return cpu::unpatchify_3d(x, grid, patch, channels);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::unpatchify_3d(x, grid, patch, channels);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

}  // namespace dattn::ops
