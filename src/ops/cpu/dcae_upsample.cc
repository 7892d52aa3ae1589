// CPU kernel of ops::dcae_upsample (HunyuanVideo-1.5's up-sampling rearrangement plus shortcut).
#include <cstdint>

#include "ops/cpu/cpu_ops.h"

namespace dattn::ops::cpu {

void dcae_upsample(const Tensor& h, const Tensor& x, int ft, bool first_frame, Tensor& out) {
  using i64 = std::int64_t;
  const i64 height = h.dim(1), width = h.dim(2), cin = x.dim(3), cout = out.dim(3);
  const i64 ch = h.dim(3), frames = out.dim(0), oh = 2 * height, ow = 2 * width;
  const float* hs = h.data_as<float>();
  const float* xs = x.data_as<float>();
  float* dst = out.data_as<float>();
  // One output row (frame, oy) per iteration; its source frame and sub-position are fixed along it.
#pragma omp parallel for schedule(static) if (out.numel() >= (i64{1} << 16))
  for (i64 row = 0; row < frames * oh; ++row) {
    const i64 to = row / oh, oy = row % oh, y = oy / 2, p = oy % 2;
    const bool first = first_frame && to == 0;
    const i64 shifted = to + (first_frame ? 1 : 0);  // with first_frame, frame 0 stands alone
    const i64 t = first ? 0 : shifted / ft, a = first ? 0 : shifted % ft;
    const i64 repeats = (first ? 4 : 4 * ft) * cout / cin, group = first ? 2 * cout : cout;
    float* d = dst + row * ow * cout;
    for (i64 ox = 0; ox < ow; ++ox) {
      const i64 q = ox % 2, s = first ? 2 * p + q : (a * 2 + p) * 2 + q;
      const float* hp = hs + ((t * height + y) * width + ox / 2) * ch + s * group;
      const float* xp = xs + ((t * height + y) * width + ox / 2) * cin;
      for (i64 co = 0; co < cout; ++co) d[ox * cout + co] = hp[co] + xp[(s * cout + co) / repeats];
    }
  }
}

}  // namespace dattn::ops::cpu
