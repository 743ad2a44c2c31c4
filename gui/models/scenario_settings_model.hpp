#pragma once
// The Explore tab's settings as an editable two-column table (setting,
// value). Choices for the value editor (models, presets, strategies, ...)
// come through kChoicesRole; an edit that does not parse is refused and
// says so (edit_refused). Every accepted edit emits settings_changed.

#include <QAbstractTableModel>
#include <QStringList>

#include "gui/models/scenario_settings.hpp"

namespace ragged::gui {

class ScenarioSettingsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Row {
    kModel,
    kGpuPreset,
    kGpus,
    kGpusPerNode,
    kNodes,
    kNicsPerNode,
    kNicBandwidth,
    kStrategy,
    kGranularity,
    kShardGroup,
    kTp,
    kCp,
    kEp,
    kPp,
    kSchedule,
    kAccumulation,
    kMicroBatch,
    kSequenceLength,
    kCheckpointing,
    kExpertsCheckpointing,
    kExpertsOverlap,
    kPrefetch,
    kOptimizer,
    kRows
  };
  enum Column { kName, kValue, kColumns };
  static constexpr int kChoicesRole = Qt::UserRole + 1;  // QStringList; empty: free text or a number

  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  const ScenarioSettings& settings() const { return settings_; }
  // Replaces every value (a scenario was opened); emits no settings_changed.
  void set_settings(const ScenarioSettings& settings);
  // One value by row, as the editor would write it; false when it does not parse.
  // A shard group typed is the user's (ScenarioSettings::shard_group_written),
  // "auto" (or nothing) gives it back to the scenario; a new tp or cp does too.
  bool set_value(Row row, const QString& value);
  // The settings were applied and the scenario derived `applied`: the values
  // the user did not write (the shard group) show what the plan uses. Emits no
  // settings_changed.
  void follow(const ScenarioSettings& applied);

 Q_SIGNALS:
  void settings_changed();
  void edit_refused(const QString& message);  // the setting, the value and what it takes

 private:
  QString value_text(int row) const;
  bool parse_into(int row, const QString& value, ScenarioSettings& out) const;

  ScenarioSettings settings_;
};

}  // namespace ragged::gui
