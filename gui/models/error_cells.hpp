#pragma once
// The cells the Compare tab's tables share: a predicted time, a measured
// one, their difference and the relative error, as display text (what a
// user reads) or as a number (kValueRole, for sorting and tests).

#include <QVariant>

namespace ragged::gui {

inline constexpr int kValueRole = Qt::UserRole + 1;

enum class ErrorCell { kPredicted, kMeasured, kDifference, kError };

// The header text of a cell.
QString error_cell_title(ErrorCell cell);
QVariant error_cell(ErrorCell cell, double predicted_s, double measured_s, int role);

}  // namespace ragged::gui
