#pragma once
// How one command on one host starts its own ranks: a dattn process that no launcher started, asked for
// N > 1 ranks, replaces itself (exec) with OpenMPI's mpirun running N copies of this executable with the
// same arguments. mpirun's output, signals and exit status are then the command's, and the ranks see
// mpirun's variables and join as ranks a user's mpirun started (world.h). Across hosts the user runs
// mpirun. docs/parallel.md, "Starting the ranks".
#include <string>
#include <vector>

namespace dattn::parallel {

// DATTN_SPAWN: unset, "" or "on": a process alone that is asked for several ranks starts them; "off": it
// is refused as before (check_degrees). UserError for another value.
bool self_start_enabled();

// The launcher a self-start runs: $DATTN_MPIRUN (a path, or a name looked up on PATH) when set, else
// mpirun on PATH. `path` is "" when there is none, and `missing` then says what was looked for.
struct Launcher {
  std::string path;
  std::string missing;
};
Launcher find_launcher();

// The launcher's arguments: `launcher -np N --bind-to none --oversubscribe [--allow-run-as-root] exe args`.
// No binding, so each rank's threads may use every core; --oversubscribe, so N may exceed OpenMPI's slot
// count (its cores); --allow-run-as-root for root (containers), whose runs OpenMPI refuses otherwise.
std::vector<std::string> self_start_command(const std::string& launcher, int ranks, const std::string& exe,
                                            const std::vector<std::string>& args, bool as_root);

// The command as one shell line (words quoted where the shell would split or expand them).
std::string shell_line(const std::vector<std::string>& command);

// This process's executable (/proc/self/exe). UserError when it cannot be read.
std::string this_executable();

// True when a self-start's launcher started this process (DATTN_SELF_STARTED, set before the exec). Such
// a process without a launcher's rank variables was started by something that is not an MPI launcher;
// starting ranks again would loop.
bool started_by_self_start();

// Marks the environment (started_by_self_start) and replaces this process with `command` (command[0] is
// the launcher's path). Returns only by throwing UserError, when the exec fails.
[[noreturn]] void exec_self_start(const std::vector<std::string>& command);

}  // namespace dattn::parallel
