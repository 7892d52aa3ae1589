#include "support/matrix_report.h"

#include <algorithm>
#include <cstdio>

#include "dattn/attention/registry.h"

namespace dattn::test {

void MatrixReport::note_rel_l2(std::string_view backend, const std::string& group, double rel_l2) {
  double& worst = (*this)[backend].worst_rel_l2[group];
  worst = std::max(worst, rel_l2);
}

void MatrixReport::print(const std::string& title, const std::vector<std::string>& order) const {
  if (tallies_.empty()) return;
  std::printf("\nBackend matrix summary (%s)\n%-14s %7s %7s %12s\n", title.c_str(), "backend", "passed", "failed",
              "unsupported");
  auto row = [](const std::string& name, const Tally& t) {
    std::printf("%-14s %7d %7d %12d\n", name.c_str(), t.passed, t.failed, t.unsupported);
    for (const auto& [k, e] : t.worst_rel_l2) std::printf("    worst rel_l2 %-16s %.2e\n", k.c_str(), e);
    for (const auto& r : t.reasons) std::printf("    unsupported: %s\n", r.c_str());
  };
  if (order.empty()) {
    for (const auto& [name, t] : tallies_) row(name, t);
  } else {
    for (const std::string& name : order)
      if (auto it = tallies_.find(name); it != tallies_.end()) row(name, it->second);
  }
  std::fflush(stdout);
}

std::vector<std::string> registered_backend_names() {
  std::vector<std::string> names;
  for (const AttentionBackend* be : registered_backends()) names.emplace_back(be->name());
  return names;
}

}  // namespace dattn::test
