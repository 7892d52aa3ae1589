#pragma once
// One-line messages for CLI11's parse errors where its own text misleads: a value of the wrong type
// ("Could not convert: --height = abc"), an option given twice ("At Most 1 required but received 2") and
// stray arguments (CLI11 2.1 lists them in reverse order).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dattn::tool {

// The message for `e`, raised while `app` parsed `args` (the arguments after the program name, in order).
std::string parse_error_text(const CLI::ParseError& e, const CLI::App& app, const std::vector<std::string>& args);

}  // namespace dattn::tool
