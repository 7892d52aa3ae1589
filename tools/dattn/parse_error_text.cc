#include "dattn/parse_error_text.h"

#include <algorithm>
#include <cstddef>

namespace dattn::tool {
namespace {

// The subcommand that was being parsed (the app itself when none was chosen).
const CLI::App& chosen(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return *sub;
  return app;
}

std::string command_name(const CLI::App& app) {
  const CLI::App& c = chosen(app);
  return &c == &app ? "dattn" : "dattn " + c.get_name();
}

// "a whole number" for CLI11's INT, "a number" for FLOAT, else the type name as CLI11 prints it.
std::string expected_value(const CLI::App& app, const std::string& name) {
  const CLI::Option* option = chosen(app).get_option_no_throw(name);
  const std::string type = option ? option->get_type_name() : "";
  if (type.rfind("UINT", 0) == 0) return "a whole number from 0";
  if (type.rfind("INT", 0) == 0) return "a whole number";
  if (type.rfind("FLOAT", 0) == 0) return "a number";
  return type.empty() ? "another value" : type;
}

// How often `name` stands in args, as `--name VALUE` or `--name=VALUE`.
std::size_t times_given(const std::vector<std::string>& args, const std::string& name) {
  return static_cast<std::size_t>(std::count_if(args.begin(), args.end(), [&](const std::string& a) {
    return a == name || a.rfind(name + "=", 0) == 0;
  }));
}

}  // namespace

std::string parse_error_text(const CLI::ParseError& e, const CLI::App& app, const std::vector<std::string>& args) {
  const std::string what = e.what();
  const std::string help = " (`" + command_name(app) + " --help` lists the options)";
  if (dynamic_cast<const CLI::ConversionError*>(&e)) {
    const std::string prefix = "Could not convert: ";
    const std::size_t eq = what.find(" = ");
    if (what.rfind(prefix, 0) == 0 && eq != std::string::npos) {
      const std::string name = what.substr(prefix.size(), eq - prefix.size()), value = what.substr(eq + 3);
      const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
      return name + " '" + value + "': expected " + expected_value(app, name) + (digits ? " of fewer digits" : "");
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    const std::string name = what.substr(0, what.find(':'));
    if (const std::size_t n = times_given(args, name); n > 1)
      return name + " is given " + std::to_string(n) + " times; give it once";
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    std::string extras;
    for (const std::string& a : chosen(app).remaining(false)) extras += (extras.empty() ? "" : " ") + a;
    const std::size_t n = chosen(app).remaining_size(false);
    if (n) return std::string(n > 1 ? "unexpected arguments: " : "unexpected argument: ") + extras + help;
  }
  return what;
}

}  // namespace dattn::tool
