// dattn: the command-line tool. Subcommands live in cmd_*.cc; this file wires them and turns errors
// into one-line messages with exit status 2 (the user's to fix: bad input, too big for this machine),
// 3 (a numeric failure: NaN or Inf, nothing written) or 1 (dattn's own failure, a bug).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dattn/core/error.h"
#include "dattn/version.h"
#include "dattn/command.h"
#include "dattn/command_word.h"
#include "dattn/parse_error_text.h"
#include "dattn/help_footer.h"
#include "dattn/integer_option.h"
#include "dattn/rank_output.h"

int main(int argc, char** argv) {
  using namespace dattn;
  using namespace dattn::tool;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    CLI::App app{"dattn: diffusion-transformer inference with pluggable, validated attention backends"};
    app.name("dattn");
    app.set_version_flag("--version", std::string(kVersion));
    app.require_subcommand(1);
    app.footer(kHelpFooter);
    std::vector<Command> commands = {add_resolve_command(app), add_backends_command(app),
                                     add_attention_command(app),   add_make_checkpoint_command(app),
                                     add_transformer_command(app), add_make_pipeline_command(app),
                                     add_generate_command(app),    add_serve_command(app)};
    require_decimal_integers(app);  // an integer option read by CLI11 alone is dattn's bug, found at once

    CommandContext ctx;
    ctx.arguments = args;
    ctx.attention_flags = extract_attention_flags(args);
    std::vector<std::string> names;
    for (const Command& c : commands) names.push_back(c.app->get_name());
    check_command_word(args, names);
    // CLI11 wants the arguments in reverse order when given as a vector.
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError& e) {
      // --help and --version end here with status 0; CLI11 prints the chosen subcommand's help.
      if (e.get_exit_code() == 0) return app.exit(e);
      std::fprintf(stderr, "dattn: error: %s\n", parse_error_text(e, app, args).c_str());
      return 2;
    }
    for (auto& c : commands) {
      if (!c.app->parsed()) continue;
      if (!c.takes_attention_flags && !ctx.attention_flags.empty())
        throw UserError("'dattn " + c.app->get_name() + "' takes no attention configuration flags");
      return c.run(ctx);
    }
    return 2;
  } catch (const UserError& e) {
    std::fprintf(error_stream(), "%serror: %s\n", error_prefix().c_str(), e.what());
    return 2;
  } catch (const NumericError& e) {
    std::fprintf(error_stream(), "%snumeric error: %s\n", error_prefix().c_str(), e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(error_stream(), "%sinternal error: %s\n", error_prefix().c_str(), e.what());
    return 1;
  }
}
