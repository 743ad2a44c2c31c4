// ragged scenario validate|list|show|import: check scenario files, list and
// print the shipped ones, turn another stack's training config into one.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/model_report.hpp"
#include "cli/scenario_options.hpp"
#include "cli/table.hpp"
#include "cli/validators.hpp"
#include "common/errors.hpp"
#include "common/input_limits.hpp"
#include "common/units.hpp"
#include "importers/import_config.hpp"
#include "planner/mesh.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::cli {
namespace {

using scenarios::Scenario;

std::string cluster_text(const Scenario& s) {
  const auto& c = s.cluster();
  std::string gpu = c.gpu().preset().empty() ? "custom GPU" : c.gpu().preset();
  return fmt::format("{} x {} ({} node{} of {})", scenarios::total_gpus(s), gpu, c.nodes(), c.nodes() > 1 ? "s" : "",
                     c.gpus_per_node());
}

void print_validated(const planner::ResolvedScenario& resolved, std::ostream& out) {
  const Scenario& s = resolved.scenario();
  const auto& t = s.training();
  out << fmt::format("{}: valid\n", resolved.loaded.origin);
  out << fmt::format("  name        {}\n", s.name());
  out << fmt::format("  model       {} ({} parameters)\n", resolved.model.name,
                     format_count(static_cast<double>(resolved.whole().params())));
  out << fmt::format("  cluster     {}\n", cluster_text(s));
  const std::string mesh = planner::mesh_text(planner::mesh_of(t));
  out << fmt::format("  strategy    {}, shard group {} x {} replica{}\n", scenarios::strategy_name(t.strategy()),
                     t.shard_group_size(), t.replicate_group_size(), t.replicate_group_size() > 1 ? "s" : "");
  if (!mesh.empty()) out << fmt::format("  mesh        {}\n", mesh);
  const bool shared = t.mesh().tp() * t.mesh().cp() > 1;  // the tp and cp ranks share a rank's sequences
  out << fmt::format("  batch       {} x {} tokens per {}, {} accumulation step{}, global {} sequences\n",
                     t.micro_batch_size(), t.sequence_length(), shared ? "data-parallel rank" : "GPU",
                     t.gradient_accumulation_steps(), t.gradient_accumulation_steps() > 1 ? "s" : "",
                     scenarios::global_batch_sequences(s));
  out << fmt::format("  granularity {}{}\n", resolved.granularity.default_spec.describe(),
                     resolved.granularity.overrides.empty() ? "" : fmt::format(" + {} override(s)", resolved.granularity.overrides.size()));
}

// ragged scenario import CONFIG [-o OUT]: the scenario a torchtitan, llm-foundry
// or DeepSpeed config maps to, resolved (its model built) before anything is written.
void add_import_command(CLI::App* cmd, Context& context) {
  auto options = std::make_shared<ScenarioOptions>();
  auto out = std::make_shared<std::string>();
  auto* import = cmd->add_subcommand(
      "import", "Turn a torchtitan job TOML, an llm-foundry YAML or a DeepSpeed JSON into a scenario file; every "
                "field of the config is accounted for in its comments (mapped, or why not)");
  import->add_option("config", options->scenario, "The config: .toml (torchtitan), .yaml (llm-foundry), .json (DeepSpeed)")
      ->required();
  import->add_option("-o,--output", *out,
                     "Write the scenario here (an MPT model's config.json beside it, named after it); default: stdout");
  import->add_option("--model", options->model,
                     "The model, a catalog name or a config.json: required for DeepSpeed, replaces the config's");
  import->add_option("--gpus", options->gpus, "Number of GPUs, where the config does not fix it")
      ->transform(whole_number(1, kMaxCount));
  options->cluster.add_to(import);
  import->add_option("--micro-batch", options->micro_batch,
                     "Sequences per GPU per micro-step, where the config has none or \"auto\"")
      ->transform(whole_number(1, limits::kMaxMicroBatch));
  import->add_option("--seq-len", options->sequence_length, "Sequence length, where the config has none (DeepSpeed)")
      ->check(sequence_length_value());
  import->callback([&context, options, out] {
    // Resolved first: a model that cannot be built is an error before any file is written.
    const importers::ImportOptions import_options = options->import_options();
    const std::string name = out->empty() ? "" : std::filesystem::path(*out).stem().string();
    const planner::ResolvedScenario resolved =
        planner::resolve_scenario(importers::load_imported(options->scenario, import_options, name));
    const importers::ImportedConfig imported =
        importers::write_imported(options->scenario, import_options, *out);
    for (const std::string& warning : imported.warnings) context.err << "ragged: warning: " << one_line(warning) << '\n';
    if (out->empty()) {
      context.out << imported.scenario_text;
      return;
    }
    const std::filesystem::path written(*out);
    context.out << fmt::format("{}: {} imported as {}{}\n", options->scenario, importers::format_name(imported.format),
                               written.string(),
                               imported.model_config_name.empty()
                                   ? ""
                                   : fmt::format(" (model: {})", (written.parent_path() / imported.model_config_name).string()));
    print_validated(resolved, context.out);
  });
}

}  // namespace

void add_scenario_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("scenario", "Validate, list and show scenarios");
  cmd->require_subcommand(1);

  auto file = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* validate = cmd->add_subcommand("validate", "Check a scenario file (or shipped name): fields, values and model");
  validate->add_option("scenario", *file, "A .textproto or .json scenario, or a shipped scenario name")->required();
  validate->add_flag("--json", *json, "Print the scenario with defaults applied as JSON");
  validate->callback([&context, file, json] {
    if (const auto format = importers::config_format_of(*file)) {
      throw InputError(fmt::format("{}: this {} is not a scenario: `ragged scenario import {}` (with --gpus N where the "
                                   "config does not fix it) writes its scenario; simulate and tune read it as it is",
                                   *file, importers::format_name(*format), *file));
    }
    planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::load_scenario(*file));
    if (*json) {
      nlohmann::json out = {{"origin", resolved.loaded.origin}, {"valid", true}, {"name", resolved.scenario().name()},
                            {"gpus", scenarios::total_gpus(resolved.scenario())}, {"params", resolved.model.params()},
                            {"scenario_text", scenarios::to_text(resolved.scenario())}};
      context.out << out.dump(2) << '\n';
    } else {
      print_validated(resolved, context.out);
    }
  });

  add_import_command(cmd, context);

  auto* list = cmd->add_subcommand("list", "List the shipped scenarios");
  auto list_json = std::make_shared<bool>(false);
  list->add_flag("--json", *list_json, "Print JSON instead of a table");
  list->callback([&context, list_json] {
    Table table;
    table.column("scenario", Table::Align::kLeft).column("cluster", Table::Align::kLeft).column("description", Table::Align::kLeft);
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& shipped : scenarios::shipped_scenarios()) {
      scenarios::LoadedScenario loaded = scenarios::load_scenario(shipped.name);
      std::string label(shipped.name);
      if (label == scenarios::kDefaultScenario) label += " (default)";
      table.row({label, cluster_text(loaded.scenario), loaded.scenario.description()});
      rows.push_back({{"name", shipped.name}, {"default", shipped.name == scenarios::kDefaultScenario},
                      {"gpus", scenarios::total_gpus(loaded.scenario)}, {"description", loaded.scenario.description()}});
    }
    if (*list_json) {
      context.out << rows.dump(2) << '\n';
    } else {
      table.print(context.out);
    }
  });

  auto name = std::make_shared<std::string>();
  auto* show = cmd->add_subcommand("show", "Print a shipped scenario's file, to copy and edit");
  show->add_option("name", *name, "A shipped scenario name")->required();
  show->callback([&context, name] {
    for (const auto& shipped : scenarios::shipped_scenarios()) {
      if (shipped.name == *name) {
        context.out << shipped.contents;
        return;
      }
    }
    scenarios::load_scenario(*name);  // throws the error listing the shipped names
  });
}

}  // namespace ragged::cli
