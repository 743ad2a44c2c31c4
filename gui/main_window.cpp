#include "gui/main_window.hpp"

#include <QApplication>
#include <QCloseEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

#include "gui/chart_export.hpp"
#include "gui/compare_tab.hpp"
#include "gui/explore_tab.hpp"
#include "gui/layout_tab.hpp"
#include "gui/models/scenario_file.hpp"
#include "gui/sweep_tab.hpp"
#include "gui/timeline_tab.hpp"
#include "gui/validation_tab.hpp"
#include "gui/whatif_tab.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(QStringLiteral("ragged-dash"));
  tabs_ = new QTabWidget(this);
  explore_ = new ExploreTab(tabs_);
  layout_ = new LayoutTab(tabs_);
  timeline_ = new TimelineTab(tabs_);
  sweep_ = new SweepTab(tabs_);
  compare_ = new CompareTab(tabs_);
  whatif_ = new WhatIfTab(tabs_);
  validation_ = new ValidationTab(tabs_);
  tabs_->addTab(explore_, QStringLiteral("Explore"));
  tabs_->addTab(layout_, QStringLiteral("Layout"));
  tabs_->addTab(timeline_, QStringLiteral("Timeline"));
  tabs_->addTab(sweep_, QStringLiteral("Sweep"));
  tabs_->addTab(compare_, QStringLiteral("Compare"));
  tabs_->addTab(whatif_, QStringLiteral("What-if"));
  tabs_->addTab(validation_, QStringLiteral("Validation"));
  setCentralWidget(tabs_);
  resize(1500, 900);

  connect(explore_, &ExploreTab::error, this, &MainWindow::show_error);
  connect(explore_, &ExploreTab::notice, this, [this](const QString& message) { statusBar()->showMessage(message, 10000); });
  connect(timeline_, &TimelineTab::error, this, &MainWindow::show_error);
  connect(compare_, &CompareTab::error, this, &MainWindow::show_error);
  connect(validation_, &ValidationTab::error, this, &MainWindow::show_error);
  connect(validation_, &ValidationTab::open_scenario, this, [this](const QString& name_or_path) {
    if (explore_->open_scenario(name_or_path)) tabs_->setCurrentWidget(explore_);
  });
  connect(explore_, &ExploreTab::scenario_resolved, this, [this] {
    layout_->set_scenario(explore_->resolved());
    sweep_->set_scenario(explore_->resolved());
    whatif_->set_scenario(explore_->resolved());
    statusBar()->showMessage(explore_->plan_text());
  });
  connect(explore_, &ExploreTab::trace_selected, timeline_, &TimelineTab::show_trace);
  connect(sweep_, &SweepTab::open_configuration, this, [this](qint64 gpus, const QString& strategy) {
    try {
      explore_->set_gpus_and_strategy(gpus, scenarios::parse_strategy(strategy.toStdString()));
      tabs_->setCurrentWidget(explore_);
    } catch (const std::exception& e) {
      show_error(QString::fromUtf8(e.what()));
    }
  });
  build_menus();
  restore_state();
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  file->addAction(QStringLiteral("&Open scenario or config…"), QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open a scenario or a training config"), QString(),
                                                      QString::fromLatin1(kScenarioFileFilter));
    if (!path.isEmpty() && explore_->open_scenario(path)) tabs_->setCurrentWidget(explore_);
  });
  file->addAction(QStringLiteral("&Save scenario as…"), QKeySequence::Save, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Save the scenario"), QString(),
                                                      QStringLiteral("Text format (*.textproto);;JSON (*.json)"));
    if (!path.isEmpty()) save_scenario_to(path);
  });
  file->addAction(QStringLiteral("Open &trace…"), QKeySequence(QStringLiteral("Ctrl+T")), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open a trace"), QString(),
                                                      QStringLiteral("Traces (*.pb *.trace *.json *.textproto);;All files (*)"));
    if (path.isEmpty()) return;
    tabs_->setCurrentWidget(timeline_);
    timeline_->open_file(path);
  });
  file->addAction(QStringLiteral("&Export charts…"), QKeySequence(QStringLiteral("Ctrl+E")), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export the current tab"), QString(),
                                                      QStringLiteral("PNG (*.png);;SVG (*.svg)"));
    if (path.isEmpty()) return;
    const QString problem = export_current(path);
    if (problem.isEmpty()) statusBar()->showMessage(QStringLiteral("exported %1").arg(path), 5000);
    else show_error(problem);
  });
  file->addAction(QStringLiteral("Export trace for &Perfetto…"), this, [this] {
    if (!timeline_->has_trace()) {
      show_error(timeline_->export_perfetto(QString()));
      return;
    }
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export the Timeline's trace for ui.perfetto.dev"),
                                                      QStringLiteral("trace.json"), QStringLiteral("Chrome trace JSON (*.json)"));
    if (path.isEmpty()) return;
    const QString problem = timeline_->export_perfetto(path);
    if (problem.isEmpty()) statusBar()->showMessage(QStringLiteral("wrote %1: open it at ui.perfetto.dev").arg(path), 8000);
    else show_error(problem);
  });
  file->addSeparator();
  file->addAction(QStringLiteral("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(QStringLiteral("&Run"));
  run->addAction(QStringLiteral("&Simulate every strategy"), QKeySequence(QStringLiteral("Ctrl+R")), this, [this] {
    if (tabs_->currentWidget() == sweep_) sweep_->run_default();
    else if (tabs_->currentWidget() == whatif_) whatif_->run();
    else explore_->run_all();
  });
  run->addAction(QStringLiteral("&Cancel"), QKeySequence(Qt::Key_Escape), this, [this] {
    explore_->cancel();
    sweep_->cancel();
    compare_->cancel_run();
    whatif_->cancel();
  });
  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  for (int i = 0; i < kTabs; ++i) {
    view->addAction(tabs_->tabText(i), QKeySequence(QStringLiteral("Ctrl+%1").arg(i + 1)), this,
                    [this, i] { tabs_->setCurrentIndex(i); });
  }
}

void MainWindow::show_error(const QString& message) {
  last_error_ = message;
  statusBar()->showMessage(message, 10000);
  if (error_box_ == nullptr) {
    error_box_ = new QMessageBox(QMessageBox::Warning, QStringLiteral("ragged-dash"), QString(), QMessageBox::Ok, this);
  }
  error_box_->setText(message);
  error_box_->open();  // not modal to the event loop: jobs keep reporting
}

QString MainWindow::export_current(const QString& path) {
  QList<QWidget*> views;
  if (tabs_->currentWidget() == explore_) views = explore_->exportable_views();
  else if (tabs_->currentWidget() == sweep_) views = sweep_->exportable_views();
  else if (tabs_->currentWidget() == compare_) views = compare_->exportable_views();
  else if (tabs_->currentWidget() == layout_) views = {layout_->view()};
  else if (tabs_->currentWidget() == whatif_) views = whatif_->exportable_views();
  else if (tabs_->currentWidget() == validation_) views = {validation_};
  else views = {timeline_->view()};
  // One file per view: name.png, name-2.png, ...
  const QFileInfo info(path);
  for (int i = 0; i < views.size(); ++i) {
    const QString file = i == 0 ? path
                                : info.dir().filePath(QStringLiteral("%1-%2.%3").arg(info.completeBaseName()).arg(i + 1).arg(info.suffix()));
    const QString problem = export_widget(views[i], file);
    if (!problem.isEmpty()) return problem;
  }
  return {};
}

bool MainWindow::save_scenario_to(const QString& path) {
  const scenarios::LoadedScenario* current = explore_->current();
  if (current == nullptr) {
    show_error(QStringLiteral("the settings are not valid: %1").arg(explore_->settings_error()));
    return false;
  }
  try {
    save_scenario(*current, path.toStdString());
  } catch (const std::exception& e) {
    show_error(QString::fromUtf8(e.what()));
    return false;
  }
  statusBar()->showMessage(QStringLiteral("saved %1").arg(path), 5000);
  return true;
}

void MainWindow::restore_state() {
  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  tabs_->setCurrentIndex(settings.value(QStringLiteral("window/tab"), 0).toInt());
}

bool MainWindow::reopen_last_scenario() {
  QSettings settings;
  const QString text = settings.value(QStringLiteral("scenario/text")).toString();
  const QString origin = settings.value(QStringLiteral("scenario/origin")).toString();
  if (text.isEmpty()) return false;
  try {
    explore_->open_loaded(scenarios::parse_scenario(text.toStdString(), scenarios::ScenarioFormat::kText,
                                                    origin.toStdString(),
                                                    settings.value(QStringLiteral("scenario/base_dir")).toString().toStdString()));
  } catch (const std::exception& e) {
    statusBar()->showMessage(QStringLiteral("the last session's scenario no longer reads: %1").arg(QString::fromUtf8(e.what())), 10000);
    return false;
  }
  return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  settings.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
  if (const scenarios::LoadedScenario* current = explore_->current()) {
    settings.setValue(QStringLiteral("scenario/origin"), QString::fromStdString(current->origin));
    settings.setValue(QStringLiteral("scenario/base_dir"), QString::fromStdString(current->base_dir.string()));
    settings.setValue(QStringLiteral("scenario/text"), QString::fromStdString(scenarios::to_text(current->written)));
  }
  QMainWindow::closeEvent(event);
}

}  // namespace ragged::gui
