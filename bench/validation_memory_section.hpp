#pragma once
// The validation report's memory section: every row with a published memory
// figure, and for a source that publishes one model at several GPU counts, a
// fit of memory against 1/GPUs that splits it into the sharded state (per
// parameter) and what every rank holds whatever the count.

#include <sstream>
#include <vector>

#include "validation/validation_set.hpp"
#include "validation/validation_summary.hpp"

namespace ragged::bench {

void memory_section(std::ostringstream& md, const validation::ValidationSet& set,
                    const std::vector<validation::RowResult>& rows);

}  // namespace ragged::bench
