#include "gui/models/simulation_results_model.hpp"

#include <QColor>

#include <algorithm>

#include <google/protobuf/text_format.h>

#include "common/units.hpp"
#include "scenarios/scenario.pb.h"
#include "sim/prediction_band.hpp"
#include "traces/metrics.hpp"

namespace ragged::gui {
namespace {

QString text(const std::string& s) { return QString::fromStdString(s); }

// The regime band of a done row, from the scenario its trace carries; none
// when the trace holds no scenario or no validation row compares.
RowBand band_of(const SimulationRow& row) {
  const traces::Summary* s = row.summary();
  scenarios::Scenario scenario;
  if (s == nullptr ||
      !google::protobuf::TextFormat::ParseFromString(row.outcome.trace->metadata().scenario_text(), &scenario)) {
    return {};
  }
  const sim::PredictionBand band = sim::regime_band(scenario, *s);
  if (band.throughput.rows == 0) return {};
  return {band.tokens_low, band.tokens_high, sim::band_sentence(band.throughput)};
}

QString state_text(const SimulationRow& row) {
  if (row.outcome.state == RunState::kRunning) return QStringLiteral("running %1%").arg(qRound(100 * row.progress));
  if (row.outcome.state == RunState::kFailed) return QStringLiteral("failed: ") + text(row.outcome.error);
  // An OOM leads the row (the memory column is off to the right): "done, OOM".
  const traces::Summary* s = row.summary();
  if (row.outcome.state == RunState::kDone && s != nullptr && s->oom()) return QStringLiteral("done, OOM");
  return text(run_state_name(row.outcome.state));
}

}  // namespace

int SimulationResultsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int SimulationResultsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant SimulationResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[kColumns] = {"GPUs", "strategy",     "state",       "step time", "tokens/s/GPU", "80% band",
                                        "MFU",  "exposed comm", "peak memory", "capacity",  "memory"};
  return section >= 0 && section < kColumns ? QVariant(QString::fromLatin1(names[section])) : QVariant();
}

QVariant SimulationResultsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const SimulationRow& row = rows_[static_cast<size_t>(index.row())];
  const traces::Summary* s = row.summary();
  if (role == Qt::ToolTipRole && row.outcome.state == RunState::kFailed) return text(row.outcome.error);
  const RowBand& band = bands_[static_cast<size_t>(index.row())];
  if (role == Qt::ToolTipRole && index.column() == kBand && !band.text.empty()) {
    return QStringLiteral("where a run like it published its tokens/s per GPU: ") + text(band.text);
  }
  if (role == Qt::ToolTipRole && index.column() == kCapacity && s != nullptr) {
    return QStringLiteral("what the caching allocator may reserve: the HBM (%1) less the CUDA context and NCCL")
        .arg(text(format_bytes(static_cast<double>(s->hbm_capacity_bytes()))));
  }
  const bool oom = s != nullptr && s->oom();
  if (role == Qt::BackgroundRole && oom) return QColor(0xfd, 0xe0, 0xe0);  // the whole row, at a glance
  if (role == Qt::ForegroundRole && oom) return QColor(0xb0, 0x00, 0x20);
  if (role == Qt::ToolTipRole && oom) {
    return QStringLiteral("out of memory: peak %1 of the allocator's %2")
        .arg(text(format_bytes(static_cast<double>(s->peak_reserved_bytes()))),
             text(format_bytes(static_cast<double>(traces::allocator_capacity_of(*s)))));
  }
  if (role == Qt::TextAlignmentRole) {
    return index.column() == kStrategy || index.column() == kState ? QVariant(int(Qt::AlignLeft | Qt::AlignVCenter))
                                                                   : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
  }
  if (role == kValueRole) {
    switch (index.column()) {
      case kGpus: return QVariant::fromValue<qlonglong>(row.gpus);
      case kState: return row.outcome.state == RunState::kRunning ? row.progress : row.outcome.state == RunState::kDone ? 1.0 : 0.0;
      default: break;
    }
    if (s == nullptr) return {};
    switch (index.column()) {
      case kStepTime: return s->step_time_s();
      case kTokensPerGpu: return s->tokens_per_s_per_gpu();
      case kMfu: return s->mfu();
      case kExposed: return s->exposed_comm_s();
      case kPeakMemory: return QVariant::fromValue<qlonglong>(s->peak_reserved_bytes());
      case kCapacity: return QVariant::fromValue<qlonglong>(traces::allocator_capacity_of(*s));
      case kFits: return !s->oom();
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kGpus: return QString::number(row.gpus);
    case kStrategy: return text(row.strategy);
    case kState: return state_text(row);
    default: break;
  }
  if (s == nullptr) return {};
  switch (index.column()) {
    case kStepTime: return text(format_seconds(s->step_time_s()));
    case kTokensPerGpu: return QString::number(qRound64(s->tokens_per_s_per_gpu()));
    case kBand:
      return band.text.empty() ? QStringLiteral("-")
                               : QStringLiteral("%1..%2").arg(qRound64(band.low)).arg(qRound64(band.high));
    case kMfu: return QStringLiteral("%1%").arg(100 * s->mfu(), 0, 'f', 1);
    case kExposed: return text(format_seconds(s->exposed_comm_s()));
    case kPeakMemory: return text(format_bytes(static_cast<double>(s->peak_reserved_bytes())));
    case kCapacity: return text(format_bytes(static_cast<double>(traces::allocator_capacity_of(*s))));
    case kFits: return text(traces::memory_verdict(*s));
    default: return {};
  }
}

void SimulationResultsModel::reset_rows(std::vector<SimulationRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  bands_.assign(rows_.size(), RowBand{});
  for (SimulationRow& row : rows_) {
    row.progress = 0;
    row.outcome = {};
  }
  endResetModel();
}

void SimulationResultsModel::row_changed(int row) {
  Q_EMIT dataChanged(index(row, 0), index(row, kColumns - 1));
}

void SimulationResultsModel::set_started(int row) {
  if (row < 0 || row >= rowCount()) return;
  rows_[static_cast<size_t>(row)].outcome.state = RunState::kRunning;
  row_changed(row);
}

void SimulationResultsModel::set_progress(int row, double fraction) {
  if (row < 0 || row >= rowCount()) return;
  SimulationRow& r = rows_[static_cast<size_t>(row)];
  r.outcome.state = RunState::kRunning;
  r.progress = fraction;
  row_changed(row);
}

void SimulationResultsModel::set_outcome(int row, const SimulationOutcome& outcome) {
  if (row < 0 || row >= rowCount()) return;
  SimulationRow& r = rows_[static_cast<size_t>(row)];
  r.outcome = outcome;
  r.progress = outcome.state == RunState::kDone ? 1.0 : r.progress;
  bands_[static_cast<size_t>(row)] = band_of(r);
  row_changed(row);
}

int SimulationResultsModel::rows_in(RunState state) const {
  return static_cast<int>(
      std::count_if(rows_.begin(), rows_.end(), [state](const SimulationRow& row) { return row.outcome.state == state; }));
}

QString SimulationResultsModel::finished_text() const {
  QString text = QStringLiteral("%1 of %2 simulated").arg(rows_in(RunState::kDone)).arg(rows_.size());
  if (const int failed = rows_in(RunState::kFailed)) text += QStringLiteral(", %1 failed").arg(failed);
  if (const int cancelled = rows_in(RunState::kCancelled)) text += QStringLiteral(", %1 cancelled").arg(cancelled);
  return text;
}

int SimulationResultsModel::finished_rows() const {
  int n = 0;
  for (const SimulationRow& row : rows_) {
    n += row.outcome.state == RunState::kDone || row.outcome.state == RunState::kFailed ||
         row.outcome.state == RunState::kCancelled;
  }
  return n;
}

}  // namespace ragged::gui
