#pragma once
// The backend matrix's bookkeeping: per-backend counts of passed, failed and unsupported cases, the
// reasons given for the unsupported ones and the worst rel_l2 per group (to show the limits' margin),
// printed as a table after all tests. No GoogleTest: the test file that owns a report registers the
// Environment that prints it (see summary_environment() in support/backend_matrix.h).
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dattn::test {

struct Tally {
  int passed = 0, failed = 0, unsupported = 0;
  std::set<std::string> reasons;
  std::map<std::string, double> worst_rel_l2;  // per dtype (and "vs golden", ...)
};

class MatrixReport {
 public:
  Tally& operator[](std::string_view backend) { return tallies_[std::string(backend)]; }
  bool empty() const { return tallies_.empty(); }
  // Keeps the larger of rel_l2 and what `group` of `backend` has seen so far.
  void note_rel_l2(std::string_view backend, const std::string& group, double rel_l2);
  // "Backend matrix summary (<title>)", then a row per backend with its worst rel_l2 and unsupported
  // reasons: the backends of `order` that have a tally, in that order; with no order, all by name.
  // Prints nothing when no tally exists.
  void print(const std::string& title, const std::vector<std::string>& order = {}) const;

 private:
  std::map<std::string, Tally> tallies_;
};

// The names of registered_backends(), in the registry's order.
std::vector<std::string> registered_backend_names();

}  // namespace dattn::test
