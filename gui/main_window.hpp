#pragma once
// The dashboard's window: the Explore, Layout, Timeline, Sweep, Compare,
// What-if and Validation tabs, menus with shortcuts (open, save, run, cancel, export), errors in a
// dialog (the CLI's one-line messages, never a crash), and the window's
// state and scenario kept between sessions (QSettings).

#include <QMainWindow>

class QMessageBox;
class QTabWidget;

namespace ragged::gui {

class CompareTab;
class ExploreTab;
class LayoutTab;
class SweepTab;
class TimelineTab;
class ValidationTab;
class WhatIfTab;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  enum Tab { kExplore, kLayout, kTimeline, kSweep, kCompare, kWhatIf, kValidation, kTabs };

  explicit MainWindow(QWidget* parent = nullptr);

  ExploreTab* explore() { return explore_; }
  LayoutTab* layout_tab() { return layout_; }
  TimelineTab* timeline() { return timeline_; }
  SweepTab* sweep() { return sweep_; }
  CompareTab* compare() { return compare_; }
  WhatIfTab* whatif() { return whatif_; }
  ValidationTab* validation() { return validation_; }
  QTabWidget* tabs() { return tabs_; }

  // Shows `message` in a (non-blocking) dialog; the last one is kept for tests.
  void show_error(const QString& message);
  QString last_error() const { return last_error_; }
  // The charts and views of the current tab, saved as PNG or SVG.
  QString export_current(const QString& path);
  bool save_scenario_to(const QString& path);
  // The scenario open when the window last closed, edits included (QSettings);
  // false when there was none or it no longer reads (the status bar says why).
  bool reopen_last_scenario();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void build_menus();
  void restore_state();

  QTabWidget* tabs_ = nullptr;
  ExploreTab* explore_ = nullptr;
  LayoutTab* layout_ = nullptr;
  TimelineTab* timeline_ = nullptr;
  SweepTab* sweep_ = nullptr;
  CompareTab* compare_ = nullptr;
  WhatIfTab* whatif_ = nullptr;
  ValidationTab* validation_ = nullptr;
  QMessageBox* error_box_ = nullptr;
  QString last_error_;
};

}  // namespace ragged::gui
