// add and mul with broadcasting. The common cases (same shape, or b repeating over a's leading
// dimensions) are one flat loop; anything else walks the output with per-operand strides.
#include <vector>

#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {
namespace {

// Element strides of `s` seen from the output shape `out` (0 along broadcast dimensions).
std::vector<std::int64_t> broadcast_strides(const Shape& s, const Shape& out) {
  std::vector<std::int64_t> st(out.size(), 0);
  std::int64_t stride = 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t dim = s.size() - 1 - i, od = out.size() - 1 - i;
    st[od] = s[dim] == 1 ? 0 : stride;
    stride *= s[dim];
  }
  return st;
}

// Whether `b` repeats every b.numel() elements of `out` (its shape, leading 1s dropped, is out's tail).
bool is_trailing(const Shape& b, const Shape& out) {
  std::size_t lead = 0;
  while (lead < b.size() && b[lead] == 1) ++lead;
  const std::size_t n = b.size() - lead;
  if (n > out.size()) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (b[lead + i] != out[out.size() - n + i]) return false;
  return true;
}

template <class F>
Tensor binary(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype, F f) {
  Tensor y = Tensor::empty(shape, out_dtype);
  F32View av(a), bv(b);
  F32Sink ys(y);
  const std::int64_t n = y.numel();
  const float* pa = av.data();
  const float* pb = bv.data();
  float* out = ys.data();
  if (a.shape() == shape && is_trailing(b.shape(), shape)) {
    const std::int64_t period = b.numel();
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(pa[i], pb[i % period]);
  } else {
    const auto sa = broadcast_strides(a.shape(), shape), sb = broadcast_strides(b.shape(), shape);
    const int nd = static_cast<int>(shape.size());
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t rest = i, oa = 0, ob = 0;
      for (int d = nd - 1; d >= 0; --d) {
        const std::int64_t idx = rest % shape[d];
        rest /= shape[d];
        oa += idx * sa[d];
        ob += idx * sb[d];
      }
      out[i] = f(pa[oa], pb[ob]);
    }
  }
  ys.finish();
  return y;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype) {
  return binary(a, b, shape, out_dtype, [](float x, float y) { return x + y; });
}

Tensor mul(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype) {
  return binary(a, b, shape, out_dtype, [](float x, float y) { return x * y; });
}

}  // namespace dattn::ops::cpu
