#pragma once
// Skips a test of `dattn serve` when the binary under test was built without it (DATTN_HAVE_SERVE off:
// no cpp-httplib or SQLite, as on the GPU machine). tests/serve is then not built at all; a CLI test that
// starts `dattn serve` asks the binary itself, which may come from another build ($DATTN_BINARY).
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"

namespace dattn::testing {

// Whether `dattn serve` is the server (cmd_serve_unavailable.cc's stand-in says "not in this build").
inline bool dattn_has_serve() {
  static const bool has = [] {
    const CliResult r = run_dattn("serve --help");
    return r.status == 0 && r.out.find("(not in this build)") == std::string::npos;
  }();
  return has;
}

}  // namespace dattn::testing

#define DATTN_SKIP_WITHOUT_SERVE() \
  if (!::dattn::testing::dattn_has_serve()) GTEST_SKIP() << "this dattn was built without `dattn serve`"
