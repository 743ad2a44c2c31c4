#pragma once
// The validation report's out-of-sample section (issue 48): first
// predictions, recorded when a row was added before any change made for it,
// beside today's error over the same rows, overall and per source with each
// source's share of the set.

#include <sstream>
#include <vector>

#include "validation/validation_summary.hpp"

namespace ragged::bench {

void out_of_sample_section(std::ostringstream& md, const std::vector<validation::RowResult>& rows);

}  // namespace ragged::bench
