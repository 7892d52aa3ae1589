#include "dattn/command_word.h"

#include "dattn/core/error.h"

namespace dattn::tool {

void check_command_word(const std::vector<std::string>& args, const std::vector<std::string>& commands) {
  // The root takes only flags without values (--help, --version), so the first word is the command.
  for (const std::string& arg : args) {
    if (!arg.empty() && arg[0] == '-') continue;
    std::string names;
    for (const std::string& name : commands) {
      if (name == arg) return;
      names += (names.empty() ? "" : ", ") + name;
    }
    throw UserError("unknown command '" + arg + "'; commands are: " + names + " ('dattn --help' says what each does)");
  }
}

}  // namespace dattn::tool
