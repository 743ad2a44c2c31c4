// ragged validate [DIR]: every published run of a validation folder (default:
// the repository's validation/) simulated and set against its published
// figures, with the summary of each set; --json for everything;
// --write-residuals FILE keeps each validation row's errors and regime for
// the prediction bands of `ragged simulate` (validation/residuals.tsv);
// --record-first-predictions COMMIT writes the first prediction of every
// row that has none into runs.textproto.

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/validate_report.hpp"
#include "cli/validators.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "common/task_pool.hpp"
#include "scenarios/gpu_presets.hpp"
#include "sim/compute_model.hpp"
#include "validation/first_prediction_record.hpp"
#include "validation/residual_export.hpp"
#include "validation/validation_run.hpp"

namespace ragged::cli {
namespace {

// The GPU preset a calibration file describes, from the device it was
// measured on; the file is read whole here, so a bad one stops the command
// before any row is simulated.
std::string calibrated_gpu(const std::string& path) {
  const std::string device = sim::ComputeModel::from_calibration(path).spec().name;
  const std::string preset = scenarios::gpu_preset_for_device(device);
  if (preset.empty()) {
    throw InputError(fmt::format("--calibration {}: its device '{}' is the device of no GPU preset (H100, H200, "
                                 "H800, A100, B200, GB200, MI300X): measure on one of those, or simulate rows with "
                                 "`ragged simulate --calibration`",
                                 path, device));
  }
  return preset;
}

}  // namespace

void add_validate_command(CLI::App& app, Context& context) {
  auto directory = std::make_shared<std::string>();
  auto filter = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto sets = std::make_shared<std::vector<std::string>>();
  auto residuals = std::make_shared<std::string>();
  auto calibration = std::make_shared<std::string>();
  auto record = std::make_shared<std::string>();
  auto jobs = std::make_shared<int64_t>(0);
  auto* cmd = app.add_subcommand("validate", "Predict every published run of a validation set and compare (error, OOM, memory)");
  cmd->add_option("dir", *directory,
                  "Validation folder holding runs.textproto (default: the repository's validation/ folder, " +
                      validation::default_validation_dir().string() + ")");
  cmd->add_option("--filter", *filter, "Only the runs whose id contains this text");
  cmd->add_option("--set", *sets,
                  "FIELD=VALUE set on every row's scenario (repeatable), to try a hypothesis on the whole set, "
                  "e.g. --set training.prefetch_depth=0");
  cmd->add_flag("--json", *json, "Print JSON: every row (source, published, predicted, errors) and the summaries");
  cmd->add_option("--write-residuals", *residuals,
                  "Write each validation row's errors and regime to FILE, the table `ragged simulate` reads its "
                  "prediction bands from (validation/residuals.tsv; rebuild to compile it in)");
  cmd->add_option("--calibration", *calibration,
                  "Compute calibration file measured on a GPU (ragged-gpu-validate): the rows on that GPU class are "
                  "simulated with it, the others with the default tables; to see which predictions a measurement "
                  "moves");
  cmd->add_option("--record-first-predictions", *record,
                  "Write the prediction of every simulated row without a first_prediction into runs.textproto, "
                  "stamped with COMMIT (the commit this build was made from) and today's date: do it when rows are "
                  "added, before anything is changed for them");
  cmd->add_option("--jobs", *jobs, "Rows simulated at once, each in its own process (default: the hardware threads)")
      ->transform(whole_number(1, 4096));
  cmd->callback([&context, directory, filter, json, sets, residuals, calibration, record, jobs] {
    if (!residuals->empty() && (!filter->empty() || !sets->empty() || !calibration->empty())) {
      throw InputError(fmt::format("--write-residuals {}: the table describes the whole set as predicted; drop "
                                   "--filter, --set and --calibration",
                                   *residuals));
    }
    if (!record->empty()) {
      if (!sets->empty() || !calibration->empty()) {
        throw InputError(fmt::format("--record-first-predictions {}: a first prediction is the default model's; drop "
                                     "--set and --calibration",
                                     *record));
      }
      validation::check_commit(*record, "--record-first-predictions");
    }
    if (!residuals->empty()) check_output_target(*residuals);  // before the whole set is predicted
    const auto set = validation::load_validation_set(directory->empty() ? validation::default_validation_dir() : std::filesystem::path(*directory));
    validation::RunOptions options;
    options.filter = *filter;
    options.jobs = *jobs > 0 ? static_cast<int>(*jobs) : hardware_threads();
    options.overrides = scenarios::parse_overrides(*sets);
    if (!calibration->empty()) {
      options.calibration = *calibration;
      options.calibrated_preset = calibrated_gpu(*calibration);
    }
    if (::isatty(STDERR_FILENO)) {
      options.progress = [](size_t done, size_t total, const validation::RowResult& row) {
        std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", done, total, row.run.id().c_str());
        if (done == total) std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
      };
    }
    const auto rows = validation::run_validation(set, options);
    if (!residuals->empty()) {
      const std::string command = fmt::format("ragged validate{} --write-residuals {}",
                                              directory->empty() ? "" : " " + *directory, *residuals);
      validation::write_residual_table(*residuals, rows, command);
    }
    if (!record->empty()) {
      const auto recorded = validation::record_first_predictions(set, rows, {*record, validation::today_utc()});
      context.err << fmt::format("recorded {} first prediction{} in {}\n", recorded.size(),
                                 recorded.size() == 1 ? "" : "s", (set.directory / validation::kManifestName).string());
      for (const auto& r : recorded) context.err << fmt::format("  {}: {}\n", r.id, r.field);
    }
    if (*json) {
      context.out << validation_to_json(set, rows, options).dump(2) << '\n';
    } else {
      print_validation(set, rows, context.out, options);
    }
  });
}

}  // namespace ragged::cli
