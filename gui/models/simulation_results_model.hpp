#pragma once
// A table of simulations, one row per (GPUs, strategy): its state while it
// runs, then the predicted step time, tokens/s per GPU, MFU, exposed
// communication and peak memory against the GPU's HBM. The Explore tab
// holds one row per strategy; the Sweep tab one per GPU count and strategy.

#include <QAbstractTableModel>

#include <vector>

#include "gui/models/simulation_outcome.hpp"

namespace ragged::gui {

struct SimulationRow {
  int64_t gpus = 0;
  std::string strategy;
  double progress = 0;
  SimulationOutcome outcome;

  const traces::Summary* summary() const { return outcome.trace ? &outcome.trace->summary() : nullptr; }
};

// Where a run like a done row's published its tokens/s per GPU: the regime's
// band of validation residuals (sim::regime_band, as `ragged tune` shows
// it), and the sentence saying how many rows held it; empty text: no band.
struct RowBand {
  double low = 0;
  double high = 0;
  std::string text;
};

class SimulationResultsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kGpus, kStrategy, kState, kStepTime, kTokensPerGpu, kBand, kMfu, kExposed, kPeakMemory, kCapacity, kFits, kColumns
  };
  static constexpr int kValueRole = Qt::UserRole + 1;  // the number behind a cell (seconds, bytes, ratio)

  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Every row queued, in this order.
  void reset_rows(std::vector<SimulationRow> rows);
  void set_started(int row);
  void set_progress(int row, double fraction);
  void set_outcome(int row, const SimulationOutcome& outcome);

  const std::vector<SimulationRow>& rows() const { return rows_; }
  const RowBand& band(int row) const { return bands_.at(static_cast<size_t>(row)); }
  int finished_rows() const;
  int rows_in(RunState state) const;
  // "4 of 6 simulated, 1 failed, 1 cancelled": what the finished rows are.
  QString finished_text() const;

 private:
  void row_changed(int row);

  std::vector<SimulationRow> rows_;
  std::vector<RowBand> bands_;  // per row
};

}  // namespace ragged::gui
