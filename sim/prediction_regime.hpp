#pragma once
// A prediction's band, read off the validation residuals (residual_table.hpp)
// of the rows in the same regime: descriptive statistics of how far published
// runs like it lay from their predictions, not a model. The regime is six
// factors; when fewer than kMinRegimeRows rows match all of them, factors
// are dropped in RegimeFactor order (the first the least telling) until
// enough do, and the band says which were dropped. The interval is the
// central one holding ceil(share x (n + 1)) of the n rows' errors (capped at
// n, the split-conformal count: a new run like them falls inside with about
// `share` probability), so it states "k of n rows were within low..high".
// docs/SIMULATOR.md section 13.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario.pb.h"
#include "sim/residual_table.hpp"
#include "traces/trace.pb.h"

namespace ragged::sim {

inline constexpr int kMinRegimeRows = 20;

// In the order they are dropped when too few rows match.
// Whether the model is a mixture of experts is dropped last: its routing and
// dispatch are what its rows' residuals are made of.
enum class RegimeFactor { kStrategy, kCheckpointing, kCommunication, kSequence, kGeneration, kModel };
inline constexpr int kRegimeFactors = 6;
std::string regime_factor_name(RegimeFactor factor);  // "strategy", "GPU generation", ...

struct Regime {
  std::string generation;     // "ampere", "hopper", "blackwell", "cdna3"; "" unknown (a GPU given by its numbers)
  std::string checkpointing;  // none, selective, full, saved_names
  std::string communication;  // exposed communication: "hidden" (< 1% of the step), "partly exposed" (< 5%), "exposed"
  std::string sequence;       // "short" (<= 4,096 tokens), "medium" (< 16,384), "long"
  std::string strategy;       // fsdp1, fsdp2, ...
  std::string model;          // kDense or kMixtureOfExperts; "" unknown
  const std::string& value(RegimeFactor factor) const;
};

std::string gpu_generation(const std::string& preset);  // "" for a preset of no known generation
std::string communication_class(double exposed_comm_share);
std::string sequence_class(int64_t tokens);
Regime regime_of(const ResidualRow& row);
// A simulated scenario's regime: its GPU, training settings, model kind and predicted exposed communication.
Regime regime_of(const scenarios::Scenario& scenario, const traces::Summary& predicted);

enum class BandMetric { kThroughput, kPeakMemory };

struct ErrorBand {
  double share = kBandShare;  // the share asked for
  // The share is the width that held `kBandShare` of another stack's rows
  // (sim::band_level); false: the stated share, or every row of the regime
  // where no width held.
  bool calibrated = false;
  int rows = 0;               // comparable rows (0: none, no band)
  int held = 0;               // of them, within [low, high]
  double low = 0;             // errors, predicted / published - 1
  double high = 0;
  std::vector<RegimeFactor> matched;  // the factors the rows share with the scenario
  std::vector<RegimeFactor> dropped;  // dropped for too few rows (or unknown for the scenario)
  std::vector<std::string> ids;       // the rows, in table order
};

// The band of `metric`'s errors over `rows` in `regime` (rows without that
// error left out).
ErrorBand error_band(const std::vector<ResidualRow>& rows, const Regime& regime, BandMetric metric,
                     double share = kBandShare, int min_rows = kMinRegimeRows);

// What the published figure would be, given the prediction and an error
// band: [predicted / (1 + high), predicted / (1 + low)].
std::pair<double, double> published_range(double predicted, const ErrorBand& band);

// The calibration check: each row's band computed from the rows of the other
// stacks only (leave one stack out), and how many rows' own errors fell inside.
struct HeldOutCoverage {
  int rows = 0;
  int inside = 0;
  double share() const { return rows > 0 ? static_cast<double>(inside) / rows : 0.0; }
};
HeldOutCoverage held_out_coverage(const std::vector<ResidualRow>& rows, BandMetric metric, double share = kBandShare,
                                  int min_rows = kMinRegimeRows);

// The share of its regime's rows a band must hold so that, built from the
// other stacks' rows alone, it holds `target` of each stack's rows: the
// smallest level in [target, 1] whose held-out coverage reaches `target`;
// none when even all of a regime's rows do not (too few stacks: the band
// cannot be calibrated across stacks). A band of `target` over rows that one
// stack dominates is too narrow for a run of another stack, as the
// validation set shows (docs/SIMULATOR.md section 13); this is the width
// that held across stacks, found from the table itself.
std::optional<double> held_out_level(const std::vector<ResidualRow>& rows, BandMetric metric,
                                     double target = kBandShare, int min_rows = kMinRegimeRows);

// The share a band of `metric` takes from these rows: held_out_level's,
// calibrated; where no level reaches the target, every row of the regime
// (1, the widest band the rows give and the nearest to the target, since
// held-out coverage grows with the level), not calibrated.
BandLevel band_level(const std::vector<ResidualRow>& rows, BandMetric metric);

}  // namespace ragged::sim
