#include "gui/models/op_error_model.hpp"

#include "gui/models/error_cells.hpp"
#include "traces/trace_names.hpp"

namespace ragged::gui {
namespace {

QString text(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

}  // namespace

QVariant OpErrorModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= kColumns) return {};
  if (section >= kPredicted) return error_cell_title(static_cast<ErrorCell>(section - kPredicted));
  static const char* names[kPredicted] = {"op id", "op", "kind", "stream", "unit"};
  return QString::fromLatin1(names[section]);
}

QVariant OpErrorModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const traces::OpComparison& op = row(index);
  if (index.column() >= kPredicted) {
    return error_cell(static_cast<ErrorCell>(index.column() - kPredicted), op.predicted_s, op.measured_s, role);
  }
  if (role == kValueRole) {
    if (index.column() == kOpId) return QVariant::fromValue<qulonglong>(op.op_id);
    if (index.column() == kUnit) return op.unit;
    return {};
  }
  if (role == Qt::TextAlignmentRole) {
    const bool number = index.column() == kOpId || index.column() == kUnit;
    return int((number ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kOpId: return QString::number(op.op_id);
    case kName: return QString::fromStdString(op.name);
    case kKind: return text(traces::op_kind_name(op.kind));
    case kStream: return text(traces::stream_name(op.stream));
    case kUnit: return op.unit < 0 ? QStringLiteral("-") : QString::number(op.unit);
    default: return {};
  }
}

}  // namespace ragged::gui
