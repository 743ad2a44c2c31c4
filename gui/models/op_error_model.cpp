#include "gui/models/op_error_model.hpp"

#include <algorithm>
#include <cmath>

#include "common/units.hpp"
#include "traces/trace_names.hpp"

namespace ragged::gui {

std::vector<traces::KindComparison> worst_kinds_first(const traces::TraceComparison& comparison) {
  std::vector<traces::KindComparison> kinds = comparison.kinds;
  std::stable_sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) {
    return std::abs(a.predicted_s - a.measured_s) > std::abs(b.predicted_s - b.measured_s);
  });
  return kinds;
}

int OpErrorModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int OpErrorModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant OpErrorModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[kColumns] = {"op kind", "ops", "predicted", "measured", "difference", "error"};
  return section >= 0 && section < kColumns ? QVariant(QString::fromLatin1(names[section])) : QVariant();
}

QVariant OpErrorModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const traces::KindComparison& k = rows_[static_cast<size_t>(index.row())];
  if (role == kValueRole) {
    switch (index.column()) {
      case kOps: return QVariant::fromValue<qlonglong>(k.ops);
      case kPredicted: return k.predicted_s;
      case kMeasured: return k.measured_s;
      case kDifference: return k.predicted_s - k.measured_s;
      case kError: return k.relative_error();
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    return index.column() == kKind ? int(Qt::AlignLeft | Qt::AlignVCenter) : int(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kKind: return QString::fromUtf8(traces::op_kind_name(k.kind).data(), static_cast<qsizetype>(traces::op_kind_name(k.kind).size()));
    case kOps: return QString::number(k.ops);
    case kPredicted: return QString::fromStdString(format_seconds(k.predicted_s));
    case kMeasured: return QString::fromStdString(format_seconds(k.measured_s));
    case kDifference: {
      const double d = k.predicted_s - k.measured_s;
      return (d < 0 ? QStringLiteral("-") : QStringLiteral("+")) + QString::fromStdString(format_seconds(std::abs(d)));
    }
    case kError: return QStringLiteral("%1%").arg(100 * k.relative_error(), 0, 'f', 1);
    default: return {};
  }
}

void OpErrorModel::set_comparison(const traces::TraceComparison& comparison) {
  beginResetModel();
  rows_ = worst_kinds_first(comparison);
  endResetModel();
}

void OpErrorModel::clear() {
  beginResetModel();
  rows_.clear();
  endResetModel();
}

}  // namespace ragged::gui
