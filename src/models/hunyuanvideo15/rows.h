#pragma once
// Moving token rows between [B, N, ...] tensors on their device: the compaction of padded text to its
// valid tokens, the packing of the text streams, and slices of the joint sequence of video then text.
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"

namespace dattn::hv15 {

using RowLists = std::vector<std::vector<std::int64_t>>;

// The positions of the nonzero entries of each row of `mask` [batch, L] (any dtype, any device).
// UserError naming `name` when the mask is not [batch, L] or holds NaN.
RowLists valid_positions(const Tensor& mask, std::int64_t batch, std::int64_t length, const std::string& name);

// The longest list's size.
std::int64_t max_count(const RowLists& rows);
std::vector<std::int64_t> counts(const RowLists& rows);

// [B, N, X...] with N = max_count(rows): row r of item b is x[b, rows[b][r]], zeros past each list.
Tensor gather_rows(const Tensor& x, const RowLists& rows);

// dst[b, dst_row + i] = src[b, src_row + i] for i < n; dst and src of one dtype and device, equal past
// dimension 1.
void copy_rows(Tensor& dst, std::int64_t b, std::int64_t dst_row, const Tensor& src, std::int64_t src_row,
               std::int64_t n);

}  // namespace dattn::hv15
