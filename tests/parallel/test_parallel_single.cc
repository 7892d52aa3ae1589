// The parallel layer without a launcher: the degrees' checks and their messages, the single-process
// communicator, all_to_all's part layout, and how the launcher's environment is read.
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "dattn/parallel/communicator.h"
#include "dattn/parallel/groups.h"
#include "dattn/parallel/world.h"
#include "parallel/part_layout.h"

namespace dattn::testing {
namespace {

using parallel::ParallelDegrees;

std::string refusal(const ParallelDegrees& d, int world) {
  try {
    parallel::check_degrees(d, world);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ParallelDegrees, AcceptsAProductEqualToTheWorldAndNamesTheFlagOtherwise) {
  EXPECT_EQ(refusal({}, 1), "");
  EXPECT_EQ(refusal({1, 2, 2}, 4), "");
  EXPECT_EQ(refusal({2, 1, 1}, 2), "");
  EXPECT_NE(refusal({0, 1, 1}, 1).find("--tensor-parallel-size 0: expected a whole number >= 1"), std::string::npos);
  EXPECT_NE(refusal({1, -1, 1}, 1).find("--ulysses-degree -1"), std::string::npos);
  EXPECT_NE(refusal({1, 1, 3}, 3).find("--cfg-parallel-size 3: expected 1 or 2"), std::string::npos);
  const std::string alone = refusal({1, 1, 2}, 1);
  EXPECT_NE(alone.find("--cfg-parallel-size 2 = 2 ranks, but this process runs alone"), std::string::npos) << alone;
  EXPECT_NE(alone.find(parallel::built_with_mpi() ? "mpirun -np 2" : "has no MPI"), std::string::npos) << alone;
  const std::string wrong = refusal({1, 2, 2}, 2);
  EXPECT_NE(wrong.find("= 4 ranks, but 2 ranks were started"), std::string::npos) << wrong;
  for (const std::string& m : {alone, wrong}) EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  // The int product wrapped: 641 x 6700417 made 1 (run as one process), 65536 x 65536 made 0; 100000 ranks were
  // started and the OOM killer ended them.
  EXPECT_NE(refusal({641, 6700417, 1}, 1).find("--ulysses-degree 6700417: expected at most 1024"), std::string::npos);
  EXPECT_NE(refusal({100000, 1, 1}, 100000).find("--tensor-parallel-size 100000: expected at most 1024"),
            std::string::npos);
  EXPECT_NE(refusal({512, 4, 1}, 2048).find("expected at most 1024 ranks in all"), std::string::npos);
  EXPECT_EQ(refusal({8, 64, 2}, 1024), "");
}

TEST(SingleProcessCommunicator, EveryCollectiveIsTheIdentity) {
  const auto c = parallel::make_single_process_communicator();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->size(), 1);
  Tensor t = Tensor::from_f32({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  c->all_reduce_sum(t);
  EXPECT_EQ(t.to_f32_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const Tensor g = c->all_gather(t);
  EXPECT_EQ(g.shape(), t.shape());
  EXPECT_NE(g.data(), t.data());  // a copy, as a real gather returns new memory
  EXPECT_EQ(c->all_to_all(t, 2, 1).to_f32_vector(), t.to_f32_vector());
  EXPECT_THROW(c->all_to_all(t, 3, 1), UserError);
  c->broadcast(t, 0);
  EXPECT_THROW(c->broadcast(t, 1), UserError);
  EXPECT_EQ(c->split(7, 0)->size(), 1);
  const parallel::ParallelGroups groups = parallel::make_groups(c, {});
  EXPECT_EQ(groups.cfg->size(), 1);
}

// `--op-times` reports the models' collectives as the stage "communication" (each of the three helpers).
TEST(CollectivesOnDevice, AreTimedAsCommunication) {
  const auto c = parallel::make_single_process_communicator();
  Tensor t = Tensor::from_f32({1, 2, 3, 4}, {1, 2, 2});
  for (int helper = 0; helper < 3; ++helper) {
    StageTimer::enable(Device::CPU);
    if (helper == 0) parallel::all_reduce_sum_on_device(*c, t);
    if (helper == 1) (void)parallel::all_gather_on_device(*c, t);
    if (helper == 2) (void)parallel::all_to_all_on_device(*c, t, 2, 1);
    const std::map<std::string, double> stages = StageTimer::collect();
    StageTimer::disable();
    EXPECT_EQ(stages.count("communication"), 1u) << "helper " << helper;
  }
}

TEST(PartLayout, PacksPartsAlongADimensionAndUnpacksThemBack) {
  // [2, 4, 3] in 2 parts along dimension 1: part 0 is rows 0-1 of each outer index, part 1 rows 2-3.
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  std::vector<float> packed(24), back(24);
  const auto* src = reinterpret_cast<const std::byte*>(v.data());
  parallel::pack_parts(src, {2, 4, 3}, 1, 2, sizeof(float), reinterpret_cast<std::byte*>(packed.data()));
  const std::vector<float> want = {0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17,
                                   6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23};
  EXPECT_EQ(packed, want);
  parallel::unpack_parts(reinterpret_cast<const std::byte*>(packed.data()), {2, 4, 3}, 1, 2, sizeof(float),
                         reinterpret_cast<std::byte*>(back.data()));
  EXPECT_EQ(back, v);
  const parallel::AllToAllShapes s = parallel::all_to_all_shapes({1, 8, 6, 4}, 2, 1, 2);
  EXPECT_EQ(s.part, (Shape{1, 8, 3, 4}));
  EXPECT_EQ(s.output, (Shape{1, 16, 3, 4}));
  EXPECT_THROW(parallel::all_to_all_shapes({1, 8, 5, 4}, 2, 1, 2), UserError);
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(LaunchInfo, ReadsOpenMpisVariablesAndRefusesMalformedOnes) {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMI_SIZE");
  EXPECT_EQ(parallel::launch_from_environment().size, 1);
  EXPECT_EQ(parallel::World::join().size(), 1);  // no launcher: a world of one, no MPI set-up
  {
    ScopedEnv size("OMPI_COMM_WORLD_SIZE", "4"), rank("OMPI_COMM_WORLD_RANK", "3"),
        local("OMPI_COMM_WORLD_LOCAL_RANK", "1");
    const parallel::LaunchInfo info = parallel::launch_from_environment();
    EXPECT_EQ(info.size, 4);
    EXPECT_EQ(info.rank, 3);
    EXPECT_EQ(info.local_rank, 1);
    EXPECT_EQ(info.variable, "OMPI_COMM_WORLD_SIZE");
  }
  if (!parallel::built_with_mpi()) {  // a multi-rank launch of a build without MPI says so
    ScopedEnv size("OMPI_COMM_WORLD_SIZE", "2");
    try {
      parallel::World::join();
      ADD_FAILURE() << "joined 2 ranks without MPI";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("this build of dattn has no MPI"), std::string::npos) << e.what();
    }
  }
  {
    ScopedEnv size("OMPI_COMM_WORLD_SIZE", "two");
    EXPECT_THROW(parallel::launch_from_environment(), UserError);
  }
  {
    ScopedEnv size("PMI_SIZE", "2"), rank("PMI_RANK", "2");
    EXPECT_THROW(parallel::launch_from_environment(), UserError);  // rank 2 of 2
  }
}

}  // namespace
}  // namespace dattn::testing
