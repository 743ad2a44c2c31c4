#pragma once
// What `ragged tune` shows: the search on one GPU count (the verdicts, the
// ranking of what fits, the throughput-memory Pareto front, the winner and
// its time to train), the best per GPU count, the fewest GPUs that fit;
// each with its --json twin. Volatile figures (wall time, workers, cache
// hits) sit under "run" in the JSON, apart from the answer.

#include <cstddef>
#include <optional>
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/gpu_search.hpp"
#include "tune/tuner.hpp"

namespace ragged::cli {

struct ReportOptions {
  size_t top = 10;                       // ranking rows printed
  std::optional<double> train_tokens;    // --train-tokens
  std::optional<double> gpu_hour_price;  // --gpu-hour-price
  int workers = 1;                       // threads over all ranks
};

void print_search(const tune::Tuner& tuner, const tune::SearchResult& result, const ReportOptions& options,
                  std::ostream& out);
void print_gpu_counts(const tune::Tuner& tuner, const std::vector<tune::GpuCountRow>& rows,
                      const ReportOptions& options, std::ostream& out);
void print_min_gpus(const tune::Tuner& tuner, const tune::MinGpusResult& result, const ReportOptions& options,
                    std::ostream& out);

nlohmann::json search_to_json(const tune::Tuner& tuner, const tune::SearchResult& result, const ReportOptions& options);
nlohmann::json gpu_counts_to_json(const tune::Tuner& tuner, const std::vector<tune::GpuCountRow>& rows,
                                  const ReportOptions& options);
nlohmann::json min_gpus_to_json(const tune::Tuner& tuner, const tune::MinGpusResult& result,
                                const ReportOptions& options);

}  // namespace ragged::cli
