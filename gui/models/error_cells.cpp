#include "gui/models/error_cells.hpp"

#include <cmath>

#include "common/units.hpp"

namespace ragged::gui {

QString error_cell_title(ErrorCell cell) {
  switch (cell) {
    case ErrorCell::kPredicted: return QStringLiteral("predicted");
    case ErrorCell::kMeasured: return QStringLiteral("measured");
    case ErrorCell::kDifference: return QStringLiteral("difference");
    case ErrorCell::kError: return QStringLiteral("error");
  }
  return {};
}

QVariant error_cell(ErrorCell cell, double predicted_s, double measured_s, int role) {
  const double difference = predicted_s - measured_s;
  const double error = measured_s > 0 ? difference / measured_s : 0;
  if (role == kValueRole) {
    switch (cell) {
      case ErrorCell::kPredicted: return predicted_s;
      case ErrorCell::kMeasured: return measured_s;
      case ErrorCell::kDifference: return difference;
      case ErrorCell::kError: return error;
    }
  }
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (cell) {
    case ErrorCell::kPredicted: return QString::fromStdString(format_seconds(predicted_s));
    case ErrorCell::kMeasured: return QString::fromStdString(format_seconds(measured_s));
    case ErrorCell::kDifference:
      return (difference < 0 ? QStringLiteral("-") : QStringLiteral("+")) + QString::fromStdString(format_seconds(std::abs(difference)));
    case ErrorCell::kError:  // signed, as `ragged compare` prints it
      return measured_s > 0 ? QStringLiteral("%1%2%").arg(error >= 0 ? "+" : "").arg(100 * error, 0, 'f', 1) : QStringLiteral("-");
  }
  return {};
}

}  // namespace ragged::gui
