#pragma once
// The knobs of the dashboard's What-if tab: the scenario's whatif block (slow
// GPUs, slow links, compute jitter) and its goodput block (interruption rate,
// restart, checkpoint storage, asynchronous checkpoints), read from a
// scenario and written back into it the way `ragged simulate --slow-gpus N:F
// --slow-links N:F --goodput ...` does. No Qt here.

#include <cstdint>

#include "scenarios/scenario_loader.hpp"

namespace ragged::gui {

struct WhatIfSettings {
  int64_t slow_gpus = 0;          // whatif.slow_gpus.count (0: none)
  double slow_gpu_fraction = 0.5;
  int64_t slow_links = 0;         // whatif.slow_links.count (0: none)
  double slow_link_fraction = 0.5;
  double jitter = 0;              // whatif.jitter.relative_stddev (0: none)
  double interruptions_per_gpu_hour = 0;
  double restart_minutes = 0;
  double storage_gbytes_per_s_per_node = 0;
  double storage_aggregate_tbytes_per_s = 0;
  bool async_checkpoint = false;
  double train_tokens = 0;        // 0: days to train not asked

  bool operator==(const WhatIfSettings&) const = default;
};

// The settings of a (defaulted) scenario: listed slow GPUs or nodes count as their number.
WhatIfSettings whatif_settings_of(const scenarios::Scenario& scenario);

// `base` with the settings that differ from whatif_settings_of(base.scenario)
// written into it (a changed count replaces a listed choice, as the CLI's
// --slow-gpus does; a count of 0 removes the block), defaulted and validated
// again. Throws InputError with the scenario's wording when a value is out
// of range (more slow GPUs than the cluster has, a fraction above 1, ...).
scenarios::LoadedScenario apply_whatif_settings(const scenarios::LoadedScenario& base, const WhatIfSettings& settings);

}  // namespace ragged::gui
