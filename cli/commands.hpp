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

void add_models_command(CLI::App& app, Context& context);
void add_inspect_command(CLI::App& app, Context& context);
void add_scenario_command(CLI::App& app, Context& context);
void add_plan_command(CLI::App& app, Context& context);
void add_simulate_command(CLI::App& app, Context& context);
void add_run_command(CLI::App& app, Context& context);
void add_compare_command(CLI::App& app, Context& context);
void add_validate_command(CLI::App& app, Context& context);
void add_tune_command(CLI::App& app, Context& context);

}  // namespace ragged::cli
