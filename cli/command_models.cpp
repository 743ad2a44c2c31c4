// ragged models: the catalog with parameter counts.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/table.hpp"
#include "common/units.hpp"
#include "models/catalog.hpp"

namespace ragged::cli {

void add_models_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("models", "List the built-in model catalog with parameter counts");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON instead of a table");
  cmd->callback([&context, json] {
    nlohmann::json rows = nlohmann::json::array();
    Table table;
    table.column("model", Table::Align::kLeft).column("family", Table::Align::kLeft).column("params").column("published");
    table.column("active").column("layers").column("experts").column("units").column("tensors");
    table.column("source", Table::Align::kLeft);
    for (const auto& entry : models::catalog()) {
      models::ModelSpec model = models::build_model(entry.arch);
      const auto& a = entry.arch;
      std::string experts = a.is_moe() ? fmt::format("{} top-{}", a.experts, a.experts_per_token) : "-";
      table.row({model.name, a.family, format_count(static_cast<double>(model.params())), format_count(entry.published_params),
                 format_count(model.active_params()), std::to_string(a.layers), experts, std::to_string(model.units.size()),
                 std::to_string(model.tensor_count()), entry.source});
      rows.push_back({{"name", model.name}, {"family", a.family}, {"params", model.params()},
                      {"published_params", entry.published_params}, {"active_params", model.active_params()},
                      {"hidden_size", a.hidden}, {"num_layers", a.layers}, {"num_experts", a.experts},
                      {"experts_per_token", a.experts_per_token}, {"units", model.units.size()},
                      {"tensors", model.tensor_count()}, {"source", entry.source}});
    }
    if (*json) {
      context.out << rows.dump(2) << '\n';
    } else {
      table.print(context.out);
    }
  });
}

}  // namespace ragged::cli
