#pragma once
// What `ragged simulate` adds for a scenario with a what-if block: what was
// changed, the step against the healthy cluster's, the critical rank and
// what it waited on (docs/SIMULATOR.md section 10).

#include <ostream>

#include "sim/simulation.hpp"

namespace ragged::cli {

void print_whatif(const scenarios::Scenario& scenario, const sim::SimulationResult& result, std::ostream& out);

}  // namespace ragged::cli
