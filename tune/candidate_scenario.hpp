#pragma once
// A candidate as a scenario: the base scenario on the GPU count searched,
// with the candidate's settings written into its training fields, so that
// defaults, checks and error messages are the scenario loader's own; and
// that scenario as a file `ragged simulate` reproduces exactly.

#include <cstdint>
#include <string>

#include "scenarios/scenario_loader.hpp"
#include "tune/search_space.hpp"

namespace ragged::tune {

// Throws InputError when the scenario rejects the combination.
scenarios::LoadedScenario candidate_scenario(const scenarios::LoadedScenario& base, const Candidate& candidate,
                                             int64_t sequence_length);

// "fsdp2, shard group 8 x 16 replicas, micro-batch 2 x 1, selective, prefetch 1, reshard"
// The candidate's mesh, "tp 8 x ep 4"; "" for FSDP alone.
std::string mesh_text(const Candidate& c);

std::string describe(const Candidate& candidate, int64_t gpus);

// The scenario as written plus the candidate's fields, named
// "<name>-tuned", with a config.json path made absolute so the file works
// from any folder: text format for `--write`.
std::string scenario_file_text(const scenarios::LoadedScenario& scenario, const std::string& description);

}  // namespace ragged::tune
