#pragma once
// A straight line through points by least squares, for reports that split a
// measurement into a fixed part and a part per unit (gpu-validate's driver
// calls by size, the validation report's memory by GPU count).

#include <vector>

namespace ragged {

struct LineFit {
  double intercept = 0;
  double slope = 0;
};

// y = intercept + slope * x minimising the squared residuals; InternalError
// unless x and y have the same length and x holds two distinct values.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace ragged
