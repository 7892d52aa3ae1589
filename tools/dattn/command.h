#pragma once
// A dattn subcommand: registers its options on a CLI11 subcommand and runs when it is chosen.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dattn/attention/config.h"

namespace dattn::tool {

// What every command receives besides its own options: the attention flags taken off the command
// line before CLI11 parses the rest (their paths are open-ended, which CLI11 cannot express).
struct CommandContext {
  AttentionFlags attention_flags;
  std::vector<std::string> arguments;  // the command line after the program name, as given: a run that
                                       // starts its own ranks passes it to them (start_ranks.h)
};

struct Command {
  CLI::App* app = nullptr;
  bool takes_attention_flags = false;
  std::function<int(const CommandContext&)> run;
};

Command add_resolve_command(CLI::App& root);
Command add_backends_command(CLI::App& root);
Command add_attention_command(CLI::App& root);
Command add_make_checkpoint_command(CLI::App& root);
Command add_transformer_command(CLI::App& root);
Command add_make_pipeline_command(CLI::App& root);
Command add_generate_command(CLI::App& root);
Command add_serve_command(CLI::App& root);

// Adds the attention configuration flags to a command's --help (they are parsed before CLI11 runs).
void document_attention_flags(CLI::App& app);

}  // namespace dattn::tool
