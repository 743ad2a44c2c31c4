#pragma once
// The Validation tab's table: every run of the validation residuals (one
// published training run each, simulated from its scenario: its stack, GPU,
// GPU count, strategy, checkpointing, sequence length, and the prediction's
// error on tokens/s and on peak memory), and the proxy that filters and
// sorts them. kValueRole gives the number a column sorts by: the errors by
// their size (how far off, either way), an absent error last in either order.

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include <string>
#include <vector>

#include "sim/residual_table.hpp"

namespace ragged::gui {

class ValidationRowsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kRun, kStack, kGpu, kGpus, kStrategy, kCheckpointing, kSequence, kThroughputError, kMemoryError, kColumns };

  explicit ValidationRowsModel(std::vector<sim::ResidualRow> rows, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  const sim::ResidualRow& row(int index) const { return rows_[static_cast<size_t>(index)]; }

 private:
  std::vector<sim::ResidualRow> rows_;
};

// Keeps the rows row_matches() accepts for the filter text; sorts by kValueRole.
class ValidationFilterModel : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit ValidationFilterModel(ValidationRowsModel* source, QObject* parent = nullptr);
  void set_filter(const QString& text);
  // The source rows kept, in the proxy's order.
  std::vector<const sim::ResidualRow*> kept() const;

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  ValidationRowsModel* rows_;
  std::string filter_;
};

}  // namespace ragged::gui
