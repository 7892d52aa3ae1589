// The pipelines' parallel checks in one process (no ranks needed: they read the degrees only): tensor
// parallel's FFN and tensor parallel x Ulysses splits are one-line errors naming the value and what was
// expected, and a family without tensor parallel refuses it by name.
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "pipeline/common/parallel_checks.h"

namespace dattn::testing {
namespace {

PipelineOptions degrees(int tensor_parallel, int ulysses) {
  PipelineOptions o;
  o.parallel.degrees.tensor_parallel = tensor_parallel;
  o.parallel.degrees.ulysses = ulysses;
  return o;
}

std::string refusal(const std::function<void()>& check) {
  try {
    check();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ParallelChecks, TensorParallelSplitsTheFfnAndTheHeadsOverBothGroups) {
  EXPECT_EQ(refusal([] { pipeline::check_tensor_parallel_split(degrees(3, 1), 6, 128, "T"); }),
            "--tensor-parallel-size 3: T has an FFN of 128 columns, not a multiple of 3; expected 1 or 2");
  EXPECT_EQ(refusal([] { pipeline::check_tensor_parallel_split(degrees(2, 2), 2, 128, "T"); }),
            "--tensor-parallel-size 2 x --ulysses-degree 2: T has 2 attention heads, not a multiple of 4 (each rank "
            "runs heads / (tensor parallel x Ulysses)); expected degrees whose product is 1 or 2");
  EXPECT_EQ(refusal([] { pipeline::check_tensor_parallel_split(degrees(2, 2), 4, 128, "T"); }), "(accepted)");
  EXPECT_EQ(refusal([] { pipeline::check_tensor_parallel_split(degrees(4, 1), 24, 13824, "T"); }), "(accepted)");
}

TEST(ParallelChecks, AFamilyWithoutTensorParallelRefusesItByName) {
  const GuidanceMode mode = GuidanceMode::Sequential;
  EXPECT_EQ(refusal([&] { pipeline::check_parallel_degrees(degrees(2, 1), mode, 16, "H's transformer", false); }),
            "--tensor-parallel-size 2: tensor parallel is not built yet for H's transformer (docs/parallel.md); "
            "expected 1");
  EXPECT_EQ(refusal([&] { pipeline::check_parallel_degrees(degrees(2, 1), mode, 16, "W", true, true); }), "(accepted)");
  EXPECT_EQ(refusal([&] { pipeline::check_parallel_degrees(degrees(3, 1), mode, 16, "W", true, true); }),
            "--tensor-parallel-size 3: W has 16 attention heads, not a multiple of 3; expected 1, 2, 4, 8 or 16");
}

}  // namespace
}  // namespace dattn::testing
