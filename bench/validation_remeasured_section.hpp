#pragma once
// The validation report's section on rows their source measured more than
// once: how far the source's own measurements of one configuration lie apart,
// and the prediction against each of them. The summary's statistics use each
// row's published figure alone; this section is the floor under them.

#include <sstream>
#include <vector>

#include "validation/validation_summary.hpp"

namespace ragged::bench {

// `far_off`: the |error| above which a row counts as far off (the report's threshold).
void remeasured_section(std::ostringstream& md, const std::vector<validation::RowResult>& rows, double far_off);

}  // namespace ragged::bench
