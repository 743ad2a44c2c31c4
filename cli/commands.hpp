#pragma once
// Each subcommand registers itself on the app; its callback writes to the
// context's streams and throws InputError for bad input.

#include <ostream>

#include <CLI/CLI.hpp>

namespace ragged::cli {

struct Context {
  std::ostream& out;
  std::ostream& err;
};

// How a binary adds `run`: executing it (add_run_command, ragged::cli) or
// listing it only (add_forwarded_run_command, the light ragged, whose main
// hands `run` to ragged-run: cli/run_forwarding.hpp).
using AddCommand = void (*)(CLI::App& app, Context& context);
int run_commands(int argc, const char* const* argv, std::ostream& out, std::ostream& err, AddCommand add_run);
inline constexpr const char* kRunDescription =
    "Execute the scenario for real (cpu: host BLAS + MPI; cuda: cuBLAS + NCCL; launch with mpirun -np N)";

void add_models_command(CLI::App& app, Context& context);
void add_inspect_command(CLI::App& app, Context& context);
void add_scenario_command(CLI::App& app, Context& context);
void add_plan_command(CLI::App& app, Context& context);
void add_simulate_command(CLI::App& app, Context& context);
void add_run_command(CLI::App& app, Context& context);
void add_forwarded_run_command(CLI::App& app, Context& context);
void add_compare_command(CLI::App& app, Context& context);
void add_validate_command(CLI::App& app, Context& context);
void add_tune_command(CLI::App& app, Context& context);

}  // namespace ragged::cli
