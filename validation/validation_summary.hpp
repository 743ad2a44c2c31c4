#pragma once
// Predicted against published, row by row, and the summary of a set: mean and
// max |error| of tokens/s per GPU, OOM agreement, memory within tolerance.
// Pure arithmetic on plain structs (no simulator), shared by the CLI, the
// results generator and the dashboard.
//
// Definitions (docs/results/validation.md repeats them):
// - error = predicted / published - 1, of tokens/s per GPU;
// - memory error = predicted peak reserved / published peak - 1 (GiB = 2^30 B),
//   or predicted peak allocated / published allocated - 1 for a source that
//   gives allocated memory (torch.cuda.max_memory_allocated) instead;
// - a false OOM: published as running, predicted out of memory; a missed OOM:
//   published out of memory, predicted to fit;
// - a row's throughput error counts whether or not the prediction says OOM
//   (the simulator still times the step); excluded rows and rows that failed to
//   simulate count in no statistic, and failures are counted apart; a row
//   whose run says throughput_excluded counts in the memory and OOM statistics
//   only.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "validation/validation.pb.h"

namespace ragged::validation {

inline constexpr double kMemoryTolerance = 0.10;  // the bar for peak memory

struct Prediction {
  double tokens_per_s_per_gpu = 0;
  double step_time_s = 0;
  double mfu = 0;
  double compute_s = 0;       // busy time of the compute stream per step
  double comm_s = 0;          // busy time of the communication streams per step
  double exposed_comm_s = 0;  // step - compute busy: the compute stream waiting on collectives
  int64_t peak_reserved_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  // A pipeline's stages, in order (empty without): each one's first rank and peaks.
  struct StagePeaks {
    int64_t first_rank = 0;
    int64_t reserved_bytes = 0;
    int64_t allocated_bytes = 0;
  };
  std::vector<StagePeaks> stages;
  int64_t capacity_bytes = 0;            // the GPU's memory
  int64_t allocator_capacity_bytes = 0;  // what the caching allocator may reserve of it
  bool oom = false;
  std::string mode;          // simulation mode (full, symmetric)
  double wall_seconds = 0;   // simulator wall time
};

enum class RowStatus { kSimulated, kFailed, kExcluded };
enum class OomAgreement { kAgree, kFalseOom, kMissedOom, kNotApplicable };

struct RowResult {
  Run run;
  RowStatus status = RowStatus::kExcluded;
  std::string failure;  // why the simulation failed (kFailed)
  // What the scenario describes (empty for excluded rows).
  std::string model;
  bool mixture_of_experts = false;  // the model routes its MLPs to experts
  int64_t gpus = 0;
  std::string gpu;  // the scenario's GPU preset ("a100-80g", "h100", ...)
  double gpu_memory_gib = 0;  // its capacity as the scenario gives it
  std::string strategy;
  std::string checkpointing;
  int64_t sequence = 0;  // tokens per sequence
  std::string attention;  // the attention kernel ("triton_flash_attention", ...)
  // Simulated with a calibration file measured on its GPU class
  // (RunOptions::calibration) instead of the simulator's default tables.
  bool calibrated = false;
  Prediction predicted;
};

// The memory figure a source gives: reserved (peak_memory_gib) or allocated.
struct PublishedMemory {
  double gib = 0;
  bool allocated = false;
};
std::optional<PublishedMemory> published_memory(const Published& published);
// The predicted peak that compares with the published one: allocated when the
// source gives allocated memory, else reserved.
int64_t predicted_memory_bytes(const RowResult& row);
std::string published_memory_text(const Published& published);  // "38.7", "38.7 alloc" or "-"

// Simulated, and its throughput compared (the run does not say throughput_excluded).
bool throughput_compared(const RowResult& row);
// Simulated, and compared on memory and OOM only (the run says throughput_excluded).
bool memory_only(const RowResult& row);
// nullopt: not compared (see above) or no published throughput.
std::optional<double> throughput_error(const RowResult& row);
// Predicted / each of the run's other published measurements - 1, in file
// order (empty unless its throughput is compared).
std::vector<double> remeasured_errors(const RowResult& row);
// The spread of what the source published for the run: max / min - 1 over its
// figure and its other measurements; nullopt without other measurements.
std::optional<double> published_spread(const Run& run);
// Compared, measured more than once, and predicted within the range of the
// source's measurements (inclusive).
bool within_published_range(const RowResult& row);
// First prediction / published - 1 of tokens/s per GPU: the row's error as
// first predicted (Run.first_prediction); nullopt unless its throughput is
// compared and a first prediction is recorded.
std::optional<double> first_prediction_error(const RowResult& row);
std::optional<double> memory_error(const RowResult& row);      // nullopt: not simulated or no published memory
OomAgreement oom_agreement(const RowResult& row);              // kNotApplicable unless simulated
// Simulated and predicted to fit with less room than the simulator's own
// peak-memory error (traces::fits_tightly).
bool fits_tightly(const RowResult& row);
std::string oom_agreement_name(OomAgreement agreement);        // "agree", "false OOM", "missed OOM", "-"
std::string status_name(RowStatus status);                     // "simulated", "failed", "excluded"

struct SetSummary {
  Set set = SET_UNSPECIFIED;
  int rows = 0;       // rows of the set that are not excluded
  int simulated = 0;
  int failed = 0;
  int excluded = 0;
  int throughput_excluded = 0;   // simulated rows compared on memory and OOM only (Run.throughput_excluded)
  int throughput_rows = 0;       // simulated rows with a published throughput that is compared
  double mean_abs_error = 0;     // over throughput_rows; 0 when none
  double max_abs_error = 0;
  std::string max_error_id;      // the row of max_abs_error
  int oom_rows = 0;              // simulated rows (every one has an OOM verdict to agree with)
  int oom_agree = 0;
  int false_ooms = 0;
  int missed_ooms = 0;
  int tight_fits = 0;            // simulated rows predicted to fit, tightly (fits_tightly)
  int memory_rows = 0;           // simulated rows with a published peak memory
  int memory_within_tolerance = 0;
  double mean_abs_memory_error = 0;
  // Out of sample: the rows of throughput_rows with a first prediction, their
  // errors as first predicted and, over the same rows, as predicted now.
  int first_prediction_rows = 0;
  double first_mean_abs_error = 0;
  double first_max_abs_error = 0;
  double current_mean_abs_error_of_first = 0;
  int remeasured_rows = 0;          // simulated rows their source measured more than once
  int within_published_range = 0;   // of those, predicted within the range of the measurements
  double max_published_spread = 0;  // the largest published_spread among them
  std::string max_spread_id;
};

SetSummary summarize(const std::vector<RowResult>& rows, Set set);

// The same statistics per source (Run.source.title) of a set, largest first:
// how much of the set each source holds, and its error as predicted now and,
// for its rows that recorded one, as first predicted.
struct SourceSummary {
  std::string source;
  int throughput_rows = 0;
  double mean_abs_error = 0;
  int first_prediction_rows = 0;
  double first_mean_abs_error = 0;
  double current_mean_abs_error_of_first = 0;
};
std::vector<SourceSummary> summarize_by_source(const std::vector<RowResult>& rows, Set set);

}  // namespace ragged::validation
