#include "cli/goodput_options.hpp"

#include <string>

#include "cli/validators.hpp"
#include "scenarios/field_ranges.hpp"

namespace ragged::cli {
namespace {

// An option taking the scenario field's own range (scenarios/field_ranges.cpp).
void add_field_option(CLI::App* command, const std::string& name, std::optional<double>& value, const char* field,
                      const std::string& help, const std::string& implies) {
  const std::optional<scenarios::FieldRange> range = scenarios::field_range("Goodput", field);
  command->add_option(name, value, help + " (goodput." + field + "; implies " + implies + ")")
      ->transform(number_between(range->min, range->max));
}

}  // namespace

void GoodputOptions::add_to(CLI::App* command) {
  command->add_flag("--goodput", goodput,
                    "Add the goodput under interruptions: the job's MTBF, checkpoint size and time, the Young/Daly "
                    "interval, the share of wall time that trains, effective tokens/s (docs/SIMULATOR.md section 9)");
  add_settings_to(command, "--goodput");
  add_field_option(command, "--train-tokens", train_tokens, "train_tokens",
                   "Tokens of the whole run: prints the days to train", "--goodput");
}

void GoodputOptions::add_settings_to(CLI::App* command, const std::string& implies) {
  add_field_option(command, "--interruptions-per-gpu-hour", interruptions_per_gpu_hour, "interruptions_per_gpu_hour",
                   "Interruptions per GPU-hour (the scenario's; default Llama 3's 1.97e-5)", implies);
  add_field_option(command, "--storage-gbytes-per-s-per-node", storage_gbytes_per_s_per_node,
                   "storage_gbytes_per_s_per_node",
                   "Checkpoint storage bandwidth of one node, GB/s (the scenario's; default 40)", implies);
  add_field_option(command, "--storage-aggregate-tbytes-per-s", storage_aggregate_tbytes_per_s,
                   "storage_aggregate_tbytes_per_s",
                   "Checkpoint storage bandwidth of the whole cluster, TB/s (the scenario's; default 2)", implies);
  add_field_option(command, "--restart-minutes", restart_minutes, "restart_minutes",
                   "Failure detection and job relaunch, before the checkpoint load (the scenario's; default 10)",
                   implies);
  add_field_option(command, "--checkpoint-interval-minutes", checkpoint_interval_minutes, "checkpoint_interval_minutes",
                   "Training time between checkpoints (default: Daly's optimum)", implies);
  command->add_flag(
      "--async-checkpoint", async_checkpoint,
      "Snapshot to host memory and write in the background (goodput.async_checkpoint; implies " + implies + ")");
}

bool GoodputOptions::settings_given() const {
  return async_checkpoint || interruptions_per_gpu_hour || storage_gbytes_per_s_per_node ||
         storage_aggregate_tbytes_per_s || restart_minutes || checkpoint_interval_minutes;
}

bool GoodputOptions::requested() const { return goodput || settings_given() || train_tokens; }

void GoodputOptions::apply(scenarios::LoadedScenario& loaded) const {
  // The values passed the fields' own ranges on the command line, and no
  // other field depends on them: they go into the written and the defaulted
  // scenario alike, without another round of defaults and checks.
  for (scenarios::Scenario* scenario : {&loaded.written, &loaded.scenario}) {
    scenarios::Goodput* g = scenario->mutable_goodput();
    if (async_checkpoint) g->set_async_checkpoint(true);
    if (interruptions_per_gpu_hour) g->set_interruptions_per_gpu_hour(*interruptions_per_gpu_hour);
    if (storage_gbytes_per_s_per_node) g->set_storage_gbytes_per_s_per_node(*storage_gbytes_per_s_per_node);
    if (storage_aggregate_tbytes_per_s) g->set_storage_aggregate_tbytes_per_s(*storage_aggregate_tbytes_per_s);
    if (restart_minutes) g->set_restart_minutes(*restart_minutes);
    if (checkpoint_interval_minutes) g->set_checkpoint_interval_minutes(*checkpoint_interval_minutes);
    if (train_tokens) g->set_train_tokens(*train_tokens);
  }
}

void GoodputOptions::apply(std::vector<planner::ResolvedScenario>& configs) const {
  for (planner::ResolvedScenario& config : configs) apply(config.loaded);
}

}  // namespace ragged::cli
