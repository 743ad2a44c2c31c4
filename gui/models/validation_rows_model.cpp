#include "gui/models/validation_rows_model.hpp"

#include <cmath>
#include <limits>

#include "gui/models/error_cells.hpp"
#include "gui/models/validation_rows.hpp"

namespace ragged::gui {
namespace {

QString text(const std::string& s) { return QString::fromStdString(s); }

// An error sorts by its size; an absent one is NaN, placed last by lessThan.
QVariant error_value(const std::optional<double>& error) {
  return error ? QVariant(std::fabs(*error)) : QVariant(std::numeric_limits<double>::quiet_NaN());
}

}  // namespace

ValidationRowsModel::ValidationRowsModel(std::vector<sim::ResidualRow> rows, QObject* parent)
    : QAbstractTableModel(parent), rows_(std::move(rows)) {}

int ValidationRowsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ValidationRowsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant ValidationRowsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const sim::ResidualRow& r = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::TextAlignmentRole) {
    return index.column() >= kGpus && index.column() != kStrategy && index.column() != kCheckpointing
               ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
               : QVariant();
  }
  if (role == Qt::ToolTipRole) return index.column() == kStack ? text(r.stack) : text(r.id);
  if (role == kValueRole) {
    switch (index.column()) {
      case kGpus: return QVariant::fromValue<qlonglong>(r.gpus);
      case kSequence: return QVariant::fromValue<qlonglong>(r.sequence);
      case kThroughputError: return error_value(r.throughput_error);
      case kMemoryError: return error_value(r.memory_error);
      default: break;
    }
  }
  if (role != Qt::DisplayRole && role != kValueRole) return {};
  switch (index.column()) {
    case kRun: return text(r.id);
    case kStack: return text(r.stack);
    case kGpu: return text(r.gpu);
    case kGpus: return QString::number(r.gpus);
    case kStrategy: return text(r.strategy);
    case kCheckpointing: return text(r.checkpointing);
    case kSequence: return QString::number(r.sequence);
    case kThroughputError: return text(error_text(r.throughput_error));
    case kMemoryError: return text(error_text(r.memory_error));
    default: return {};
  }
}

QVariant ValidationRowsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* titles[kColumns] = {"run", "stack", "GPU", "GPUs", "strategy", "checkpointing", "sequence",
                                         "tokens/s error", "memory error"};
  return section >= 0 && section < kColumns ? QString::fromLatin1(titles[section]) : QVariant();
}

ValidationFilterModel::ValidationFilterModel(ValidationRowsModel* source, QObject* parent)
    : QSortFilterProxyModel(parent), rows_(source) {
  setSourceModel(source);
  setSortRole(kValueRole);
}

void ValidationFilterModel::set_filter(const QString& text) {
  filter_ = text.toStdString();
  invalidateFilter();
}

std::vector<const sim::ResidualRow*> ValidationFilterModel::kept() const {
  std::vector<const sim::ResidualRow*> out;
  for (int i = 0; i < rowCount(); ++i) out.push_back(&rows_->row(mapToSource(index(i, 0)).row()));
  return out;
}

bool ValidationFilterModel::filterAcceptsRow(int source_row, const QModelIndex&) const {
  return row_matches(rows_->row(source_row), filter_);
}

bool ValidationFilterModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant a = left.data(kValueRole), b = right.data(kValueRole);
  if (a.typeId() == QMetaType::QString) return QString::compare(a.toString(), b.toString(), Qt::CaseInsensitive) < 0;
  const double x = a.toDouble(), y = b.toDouble();
  // Qt reverses lessThan for a descending sort: an absent value is the
  // largest going up and the smallest going down, so last both ways.
  const bool up = sortOrder() == Qt::AscendingOrder;
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) != std::isnan(y) && (std::isnan(y) ? up : !up);
  return x < y;
}

}  // namespace ragged::gui
