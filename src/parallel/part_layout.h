#pragma once
// How all_to_all cuts a tensor into the parts it sends and puts the parts it receives together: host
// copies shared by the MPI communicator (and the shape rules every transport checks).
#include <cstddef>
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::parallel {

// A shape seen as [outer, dim, inner] around one of its dimensions.
struct AroundDim {
  std::int64_t outer = 1, dim = 1, inner = 1;
};
AroundDim around_dim(const Shape& shape, int d);

struct AllToAllShapes {
  Shape part;    // one part: the input with scatter_dim divided by the rank count
  Shape output;  // the part with gather_dim multiplied by the rank count
};
// UserError for a dimension out of range or a scatter dimension that does not divide by `ranks`.
AllToAllShapes all_to_all_shapes(const Shape& input, int scatter_dim, int gather_dim, int ranks);

// Copies `src` (shape `whole`) into `parts` contiguous parts along dimension d, part after part.
void pack_parts(const std::byte* src, const Shape& whole, int d, int parts, std::size_t element, std::byte* dst);
// The reverse: `parts` contiguous parts into `dst` (shape `whole`), part p at rows [p*len, (p+1)*len) of d.
void unpack_parts(const std::byte* src, const Shape& whole, int d, int parts, std::size_t element, std::byte* dst);

}  // namespace dattn::parallel
