#include "gui/models/kind_error_model.hpp"

#include "gui/models/error_cells.hpp"
#include "traces/trace_names.hpp"

namespace ragged::gui {

QVariant KindErrorModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= kColumns) return {};
  if (section >= kPredicted) return error_cell_title(static_cast<ErrorCell>(section - kPredicted));
  return section == kKind ? QStringLiteral("op kind") : QStringLiteral("ops");
}

QVariant KindErrorModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const traces::KindComparison& k = row(index);
  if (index.column() >= kPredicted) {
    return error_cell(static_cast<ErrorCell>(index.column() - kPredicted), k.predicted_s, k.measured_s, role);
  }
  if (index.column() == kOps) {
    if (role == kValueRole) return QVariant::fromValue<qlonglong>(k.ops);
    if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
    return role == Qt::DisplayRole ? QVariant(QString::number(k.ops)) : QVariant();
  }
  if (role != Qt::DisplayRole) return {};
  const std::string_view name = traces::op_kind_name(k.kind);
  return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

}  // namespace ragged::gui
