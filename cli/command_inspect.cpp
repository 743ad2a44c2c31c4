// ragged inspect MODEL|config.json: units, tensors, parameters, FLOPs per token.

#include <filesystem>

#include "cli/validators.hpp"
#include "cli/commands.hpp"
#include "cli/model_report.hpp"
#include "common/errors.hpp"
#include "models/catalog.hpp"
#include "models/hf_config.hpp"

namespace ragged::cli {
namespace {

struct InspectOptions {
  std::string model;
  int64_t seq_len = 4096;
  bool tensors = false;
  bool json = false;
};

models::ModelSpec load_model(const std::string& name_or_path) {
  if (models::names_a_config(name_or_path)) return models::load_hf_config(name_or_path);
  return models::catalog_model(name_or_path);
}

}  // namespace

void add_inspect_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<InspectOptions>();
  auto* cmd = app.add_subcommand("inspect", "Show a model's units, tensors, parameters and FLOPs per token");
  cmd->add_option("model", options->model, "A catalog name (see `ragged models`) or a Hugging Face config.json")->required();
  cmd->add_option("--seq", options->seq_len, "Sequence length for attention FLOPs")->capture_default_str()->transform(whole_number(1, kMaxCount));
  cmd->add_flag("--tensors", options->tensors, "List the tensors of every distinct unit");
  cmd->add_flag("--json", options->json, "Print JSON (every tensor of every unit)");
  cmd->callback([&context, options] {
    models::ModelSpec model = load_model(options->model);
    if (options->json) {
      context.out << model_to_json(model, options->seq_len, true).dump(2) << '\n';
      return;
    }
    print_model_summary(model, options->seq_len, context.out);
    context.out << '\n';
    print_unit_table(model, options->seq_len, context.out);
    if (options->tensors) print_tensor_table(model, context.out);
  });
}

}  // namespace ragged::cli
