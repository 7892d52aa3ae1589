// `dattn serve` in a build without the serve layer (DATTN_SERVE=off, or SQLite / cpp-httplib missing when
// it was configured): the command exists, takes any arguments, and says how to get it.
#include <memory>
#include <string>
#include <vector>

#include "dattn/command.h"
#include "dattn/core/error.h"

namespace dattn::tool {

Command add_serve_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("serve", "An OpenAI-style HTTP server (not in this build)");
  app->allow_extras();
  return {app, true, [](const CommandContext&) -> int {
            throw UserError("this dattn was built without `dattn serve`: configure with -DDATTN_SERVE=on after "
                            "installing libsqlite3-dev and libcpp-httplib-dev (scripts/install-deps.sh)");
          }};
}

}  // namespace dattn::tool
