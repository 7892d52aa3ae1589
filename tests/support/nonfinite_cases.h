#pragma once
// The backend matrix's non-finite cases, alike on the CPU and on CUDA: inputs with one NaN or Inf placed
// where it matters (a query row, a valid key, a valid value), NaN in padding keys and in the query of a
// fully masked row. Each backend must give NaN/Inf exactly where the float64 reference does (a NaN in q
// row i -> row i; in a key a row attends to -> that row; in a value -> that channel), zeros for the fully
// masked row, and stay within its usual limits everywhere else. Reports through GoogleTest's non-fatal
// assertions and tallies in the harness's report.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/backend.h"
#include "support/attention_cases.h"
#include "support/backend_matrix.h"

namespace dattn::test {

// The reference a backend run is compared with (the float64 reference of the case, or for SPARSE_BLOCK
// below density 1 that reference over the blocks it keeps).
using ReferenceOf = std::function<std::vector<double>(AttentionCase&)>;

// Runs every non-finite case that `be` supports on h's device with `extra`, for head dims 64 and 128
// and every dtype of the matrix. `what` labels the extras. SAGE_ATTN cannot carry an Inf score through
// its INT8 scales and turns every row of the head NaN instead (docs/backend-semantics.md): for it, and
// only in the Inf-key case, the output may be non-finite where the reference is not. Returns how many
// cases ran.
// causal: the same poisons on causal problems (Sq = Sk = 150, so a later key's NaN must not reach an
// earlier row across tiles and inside one); values false leaves out the NaN-in-a-value case (FLASH_ATTN
// on CUDA lets it reach earlier rows of the diagonal tile, docs/backend-semantics.md).
struct NonfiniteOptions {
  bool causal = false;
  bool values = true;
};
int run_nonfinite_cases(MatrixHarness& h, const AttentionBackend& be, const nlohmann::json& extra,
                        const ReferenceOf& reference_of, const std::string& what, const NonfiniteOptions& opt = {});

}  // namespace dattn::test
