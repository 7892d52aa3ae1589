// all_to_all's part layout (see part_layout.h).
#include "parallel/part_layout.h"

#include <cstring>
#include <string>

#include "dattn/core/error.h"

namespace dattn::parallel {
namespace {

// Part p of `parts` along d, as byte ranges: for each outer index one block of len * inner elements.
template <class Copy>
void for_each_block(const Shape& whole, int d, int parts, std::size_t element, Copy copy) {
  const AroundDim a = around_dim(whole, d);
  const std::int64_t len = a.dim / parts;
  const std::size_t block = static_cast<std::size_t>(len * a.inner) * element;
  std::size_t packed = 0;
  for (int p = 0; p < parts; ++p)
    for (std::int64_t o = 0; o < a.outer; ++o) {
      const std::size_t strided = static_cast<std::size_t>((o * a.dim + p * len) * a.inner) * element;
      copy(strided, packed, block);
      packed += block;
    }
}

}  // namespace

AroundDim around_dim(const Shape& shape, int d) {
  AroundDim a;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (i < d) a.outer *= shape[static_cast<std::size_t>(i)];
    if (i == d) a.dim = shape[static_cast<std::size_t>(i)];
    if (i > d) a.inner *= shape[static_cast<std::size_t>(i)];
  }
  return a;
}

AllToAllShapes all_to_all_shapes(const Shape& input, int scatter_dim, int gather_dim, int ranks) {
  const int n = static_cast<int>(input.size());
  for (int d : {scatter_dim, gather_dim})
    if (d < 0 || d >= n)
      throw UserError("all_to_all: dimension " + std::to_string(d) + " of a " + shape_str(input) +
                      " tensor: expected 0 to " + std::to_string(n - 1));
  const std::int64_t size = input[static_cast<std::size_t>(scatter_dim)];
  if (size % ranks != 0)
    throw UserError("all_to_all: dimension " + std::to_string(scatter_dim) + " of " + shape_str(input) + " is " +
                    std::to_string(size) + ", not a multiple of the " + std::to_string(ranks) + " ranks");
  AllToAllShapes s;
  s.part = input;
  s.part[static_cast<std::size_t>(scatter_dim)] /= ranks;
  s.output = s.part;
  s.output[static_cast<std::size_t>(gather_dim)] *= ranks;
  return s;
}

void pack_parts(const std::byte* src, const Shape& whole, int d, int parts, std::size_t element, std::byte* dst) {
  for_each_block(whole, d, parts, element,
                 [&](std::size_t strided, std::size_t packed, std::size_t n) { std::memcpy(dst + packed, src + strided, n); });
}

void unpack_parts(const std::byte* src, const Shape& whole, int d, int parts, std::size_t element, std::byte* dst) {
  for_each_block(whole, d, parts, element,
                 [&](std::size_t strided, std::size_t packed, std::size_t n) { std::memcpy(dst + strided, src + packed, n); });
}

}  // namespace dattn::parallel
