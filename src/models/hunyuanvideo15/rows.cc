// Token row moves (see rows.h): every move is a run of contiguous rows, one copy per run.
#include "models/hunyuanvideo15/rows.h"

#include <algorithm>
#include <cmath>

#include "dattn/core/error.h"

namespace dattn::hv15 {
namespace {

std::int64_t row_elems(const Tensor& x) { return x.numel() / (x.dim(0) * x.dim(1)); }

// x [B, N, ...] as [B * N, row] so that narrow0 addresses rows.
Tensor as_rows(const Tensor& x) { return x.reshape({x.dim(0) * x.dim(1), row_elems(x)}); }

}  // namespace

RowLists valid_positions(const Tensor& mask, std::int64_t batch, std::int64_t length, const std::string& name) {
  if (!mask.defined() || mask.ndim() != 2 || mask.dim(0) != batch || mask.dim(1) != length)
    throw UserError(name + " " + (mask.defined() ? mask.describe() : std::string("(missing)")) + ": expected [" +
                    std::to_string(batch) + ", " + std::to_string(length) + "] (one entry per token)");
  const std::vector<double> v = mask.to_f64_vector();
  RowLists rows(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < length; ++i) {
      const double m = v[b * length + i];
      if (std::isnan(m)) throw UserError(name + " holds NaN at [" + std::to_string(b) + ", " + std::to_string(i) + "]");
      if (m != 0) rows[b].push_back(i);
    }
  return rows;
}

std::int64_t max_count(const RowLists& rows) {
  std::size_t n = 0;
  for (const auto& r : rows) n = std::max(n, r.size());
  return static_cast<std::int64_t>(n);
}

std::vector<std::int64_t> counts(const RowLists& rows) {
  std::vector<std::int64_t> c;
  for (const auto& r : rows) c.push_back(static_cast<std::int64_t>(r.size()));
  return c;
}

void copy_rows(Tensor& dst, std::int64_t b, std::int64_t dst_row, const Tensor& src, std::int64_t src_row,
               std::int64_t n) {
  if (n == 0) return;
  as_rows(dst).narrow0(b * dst.dim(1) + dst_row, n).copy_from(as_rows(src).narrow0(b * src.dim(1) + src_row, n));
}

Tensor gather_rows(const Tensor& x, const RowLists& rows) {
  Shape shape = x.shape();
  shape[1] = max_count(rows);
  Tensor out = Tensor::zeros(shape, x.dtype(), x.device());
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const auto& r = rows[b];
    for (std::size_t i = 0; i < r.size();) {
      std::size_t j = i + 1;
      while (j < r.size() && r[j] == r[j - 1] + 1) ++j;  // one copy per run of consecutive positions
      copy_rows(out, static_cast<std::int64_t>(b), static_cast<std::int64_t>(i), x, r[i], static_cast<std::int64_t>(j - i));
      i = j;
    }
  }
  return out;
}

}  // namespace dattn::hv15
