#pragma once
// The command word of `dattn WORD ...`, checked before CLI11 parses (which says only "A subcommand is
// required" for a word it does not know).
#include <string>
#include <vector>

namespace dattn::tool {

// Throws UserError "unknown command 'WORD'; commands are: ..." when the first word of `args` (the
// arguments after the program name, attention flags taken off) is none of `commands`.
void check_command_word(const std::vector<std::string>& args, const std::vector<std::string>& commands);

}  // namespace dattn::tool
