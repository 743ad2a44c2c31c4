// ragged plan: layouts per unit, padding against the lower bound,
// communication and copy bytes per step, memory per rank; --strategy all
// compares the strategies side by side.

#include "cli/commands.hpp"
#include "cli/plan_report.hpp"
#include "cli/scenario_options.hpp"

namespace ragged::cli {

void add_plan_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<ScenarioOptions>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("plan", "Plan the RaggedShard (or baseline) layout of every FSDP unit");
  options->add_to(cmd, true);
  cmd->add_flag("--json", *json, "Print JSON (an array with --strategy all)");
  cmd->callback([&context, options, json] {
    std::vector<PlanReport> reports;
    for (auto& resolved : options->resolve()) reports.push_back(make_plan_report(std::move(resolved)));
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : reports) out.push_back(plan_to_json(r));
      context.out << (reports.size() == 1 ? out.front() : out).dump(2) << '\n';
    } else if (reports.size() == 1) {
      print_plan(reports.front(), context.out);
    } else {
      print_plan_comparison(reports, context.out);
    }
  });
}

}  // namespace ragged::cli
