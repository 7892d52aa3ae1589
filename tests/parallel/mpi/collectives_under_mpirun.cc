// MpiCommunicator's collectives, run by ctest under `mpirun -np N` (tests/CMakeLists.txt): every rank
// runs every case, each checks what it received. --ranks=N says how many ranks the launch should have,
// so a run without mpirun fails instead of passing as a world of one. Every case makes the same
// collectives on every rank whatever it sees (EXPECT, not ASSERT), so a failure cannot hang the others.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/device.h"
#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/parallel/communicator.h"
#include "dattn/parallel/groups.h"
#include "dattn/parallel/world.h"
#include "parallel/mpi/mpi_world.h"

namespace dattn::testing {

std::shared_ptr<parallel::Communicator> g_world;
int g_expected_ranks = 0;

namespace {

class MpiCollectives : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
    ASSERT_EQ(g_world->size(), g_expected_ranks) << "run under mpirun -np " << g_expected_ranks;
    ASSERT_EQ(g_world->transport(), "mpi");
  }
  int rank() const { return g_world->rank(); }
  int size() const { return g_world->size(); }
};

TEST_F(MpiCollectives, AllGatherConcatenatesInRankOrderForEachDtype) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    std::vector<float> mine(6);
    for (int i = 0; i < 6; ++i) mine[static_cast<std::size_t>(i)] = static_cast<float>(rank() * 10 + i);
    const Tensor got = g_world->all_gather(Tensor::from_f32(mine, {2, 3}, dtype));
    EXPECT_EQ(got.shape(), (Shape{2 * size(), 3}));
    EXPECT_EQ(got.dtype(), dtype);
    std::vector<float> want;
    for (int r = 0; r < size(); ++r)
      for (int i = 0; i < 6; ++i) want.push_back(static_cast<float>(r * 10 + i));
    EXPECT_EQ(got.to_f32_vector(), want);
  }
}

TEST_F(MpiCollectives, AllReduceSumsInPlace) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    Tensor t = Tensor::from_f32({1.0f * (rank() + 1), -2.0f * (rank() + 1), 0.5f}, {3}, dtype);
    g_world->all_reduce_sum(t);
    const float s = static_cast<float>(size() * (size() + 1) / 2);  // 1 + 2 + ... + P: exact in every dtype
    EXPECT_EQ(t.to_f32_vector(), (std::vector<float>{s, -2 * s, 0.5f * static_cast<float>(size())}));
  }
}

// Ulysses' exchange: each rank holds a sequence shard [B, S/P, H, D] of one global tensor; after the
// all-to-all it holds every position of its H/P heads, and the reverse exchange gives the shard back.
TEST_F(MpiCollectives, AllToAllTradesASequenceShardForAHeadShardAndBack) {
  const std::int64_t B = 2, S = 3 * size(), H = 2 * size(), D = 5, s = S / size(), h = H / size();
  auto value = [&](std::int64_t b, std::int64_t i, std::int64_t j, std::int64_t d) {
    return static_cast<float>(((b * S + i) * H + j) * D + d);
  };
  std::vector<float> shard;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = rank() * s; i < (rank() + 1) * s; ++i)
      for (std::int64_t j = 0; j < H; ++j)
        for (std::int64_t d = 0; d < D; ++d) shard.push_back(value(b, i, j, d));
  const Tensor local = Tensor::from_f32(shard, {B, s, H, D});
  const Tensor heads = g_world->all_to_all(local, 2, 1);
  EXPECT_EQ(heads.shape(), (Shape{B, S, h, D}));
  std::vector<float> want;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < S; ++i)
      for (std::int64_t j = rank() * h; j < (rank() + 1) * h; ++j)
        for (std::int64_t d = 0; d < D; ++d) want.push_back(value(b, i, j, d));
  EXPECT_EQ(heads.to_f32_vector(), want);
  const Tensor back = g_world->all_to_all(heads, 1, 2);
  EXPECT_EQ(back.shape(), local.shape());
  EXPECT_EQ(back.to_f32_vector(), shard);
  // bf16 moves as bytes: [1, 1, P] of r * P + j; rank r receives element r of every rank, q * P + r.
  std::vector<float> row, col;
  for (int j = 0; j < size(); ++j) row.push_back(static_cast<float>(rank() * size() + j));
  for (int q = 0; q < size(); ++q) col.push_back(static_cast<float>(q * size() + rank()));
  const Tensor bf = g_world->all_to_all(Tensor::from_f32(row, {1, 1, size()}, DType::BF16), 2, 1);
  EXPECT_EQ(bf.shape(), (Shape{1, size(), 1}));
  EXPECT_EQ(bf.to_f32_vector(), col);
}

TEST_F(MpiCollectives, BroadcastCopiesTheRootsTensor) {
  const int root = size() - 1;
  Tensor t = Tensor::from_f32({static_cast<float>(rank()), 7.0f}, {2});
  g_world->broadcast(t, root);
  EXPECT_EQ(t.to_f32_vector(), (std::vector<float>{static_cast<float>(root), 7.0f}));
  g_world->barrier();
  EXPECT_THROW(g_world->broadcast(t, size()), UserError);  // refused before any message
}

TEST_F(MpiCollectives, GroupsFollowTheRankLayout) {
  // cfg outermost: with P = 2 the two ranks are one CFG pair; with P = 4, Ulysses 2 x CFG 2.
  parallel::ParallelDegrees d;
  d.cfg = 2;
  d.ulysses = size() / 2;
  const parallel::ParallelGroups g = parallel::make_groups(g_world, d);
  EXPECT_EQ(g.cfg->size(), 2);
  EXPECT_EQ(g.cfg->rank(), rank() / d.ulysses);
  EXPECT_EQ(g.ulysses->size(), d.ulysses);
  EXPECT_EQ(g.ulysses->rank(), rank() % d.ulysses);
  EXPECT_EQ(g.tensor_parallel->size(), 1);
  // The CFG group gathers its two ranks' tensors only: the world ranks u and u + U.
  const Tensor got = g.cfg->all_gather(Tensor::from_f32({static_cast<float>(rank())}, {1}));
  const float u = static_cast<float>(rank() % d.ulysses);
  EXPECT_EQ(got.to_f32_vector(), (std::vector<float>{u, u + static_cast<float>(d.ulysses)}));
}

TEST_F(MpiCollectives, RanksPassingDifferentShapesGetAnErrorNotAHang) {
  const Tensor t = Tensor::zeros({rank() == 0 ? 2 : 3}, DType::F32);
  EXPECT_THROW(g_world->all_gather(t), UserError);
  Tensor u = Tensor::zeros({2}, rank() == 0 ? DType::F32 : DType::BF16);
  EXPECT_THROW(g_world->all_reduce_sum(u), UserError);
}

// The same collectives over NCCL on CUDA tensors, where this build has NCCL and the host a GPU per rank:
// the groups' device transport (with_device_transport) of a Ulysses group of every rank.
TEST(NcclCollectives, GatherSumAndExchangeCudaTensors) {
  if (!parallel::built_with_nccl()) GTEST_SKIP() << "this build has no NCCL (a CUDA build that found nccl.h)";
  const parallel::LaunchInfo launch = parallel::launch_from_environment();
  if (cuda_device_count() <= launch.local_rank) GTEST_SKIP() << "no GPU for local rank " << launch.local_rank;
  const int p = g_world->size(), r = g_world->rank();
  parallel::ParallelDegrees d;
  d.ulysses = p;
  const auto context = RunContext::create(Device::CUDA, launch.local_rank);
  const ContextScope bound(*context);
  const parallel::ParallelGroups groups =
      parallel::with_device_transport(parallel::make_groups(g_world, d), Device::CUDA, launch.local_rank);
  parallel::Communicator& nccl = *groups.ulysses;
  EXPECT_EQ(nccl.transport(), "nccl");
  const Tensor gathered = nccl.all_gather(Tensor::from_f32({1.0f * r, 2.0f * r}, {1, 2}).to(Device::CUDA));
  std::vector<float> want;
  for (int q = 0; q < p; ++q) want.insert(want.end(), {1.0f * q, 2.0f * q});
  EXPECT_EQ(gathered.to_f32_vector(), want);
  Tensor sum = Tensor::from_f32({1.0f * (r + 1)}, {1}, DType::BF16).to(Device::CUDA);
  nccl.all_reduce_sum(sum);
  EXPECT_EQ(sum.to_f32_vector(), std::vector<float>{static_cast<float>(p * (p + 1) / 2)});
  std::vector<float> row, col;
  for (int j = 0; j < p; ++j) row.push_back(static_cast<float>(r * p + j));
  for (int q = 0; q < p; ++q) col.push_back(static_cast<float>(q * p + r));
  const Tensor exchanged = nccl.all_to_all(Tensor::from_f32(row, {1, 1, p}).to(Device::CUDA), 2, 1);
  EXPECT_EQ(exchanged.shape(), (Shape{1, p, 1}));
  EXPECT_EQ(exchanged.to_f32_vector(), col);
  nccl.barrier();
}

// On ranks other than 0: each failed assertion, prefixed with the rank, instead of the full report.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "rank %d: %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace dattn::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--ranks=", 8) == 0) dattn::testing::g_expected_ranks = std::atoi(argv[i] + 8);
  int status = 0;
  {
    const dattn::parallel::World world = dattn::parallel::World::join();
    dattn::testing::g_world = world.communicator();
    // Rank 0 prints the report; the others print only their failures (gtest's default printer on each
    // would repeat every line N times).
    if (world.rank() != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new dattn::testing::FailurePrinter(world.rank()));
    }
    status = RUN_ALL_TESTS();
    dattn::testing::g_world.reset();
  }
  return status;
}
