// The communicator of a run of one rank: every collective over one rank is the identity.
#include <memory>
#include <string>
#include <string_view>

#include "dattn/core/error.h"
#include "dattn/parallel/communicator.h"
#include "parallel/part_layout.h"

namespace dattn::parallel {
namespace {

class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string_view transport() const override { return "single-process"; }
  bool moves(Device) const override { return true; }
  void all_reduce_sum(Tensor&) override {}
  Tensor all_gather(const Tensor& local) override { return local.clone(); }
  Tensor all_to_all(const Tensor& input, int scatter_dim, int gather_dim) override {
    // The same argument checks as a real transport, so a bad call fails at size 1 too.
    all_to_all_shapes(input.shape(), scatter_dim, gather_dim, 1);
    return input.clone();
  }
  void broadcast(Tensor&, int root) override {
    if (root != 0) throw UserError("broadcast from rank " + std::to_string(root) + " of a single-process run");
  }
  void barrier() override {}
  std::shared_ptr<Communicator> split(int, int) override { return std::make_shared<SingleProcessCommunicator>(); }
};

}  // namespace

std::shared_ptr<Communicator> make_single_process_communicator() {
  return std::make_shared<SingleProcessCommunicator>();
}

}  // namespace dattn::parallel
