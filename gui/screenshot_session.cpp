#include "gui/screenshot_session.hpp"

#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QImage>
#include <QPixmap>
#include <QTabWidget>
#include <QTimer>

#include "gui/compare_tab.hpp"
#include "gui/explore_tab.hpp"
#include "gui/layout_tab.hpp"
#include "gui/main_window.hpp"
#include "gui/models/sweep_series.hpp"
#include "gui/sweep_tab.hpp"
#include "gui/timeline_tab.hpp"
#include "gui/whatif_tab.hpp"

namespace ragged::gui {
namespace {

// Runs the event loop until `done()` or the deadline; false on timeout.
template <class Done>
bool wait_until(Done done, const QElapsedTimer& clock, int timeout_ms) {
  while (!done()) {
    if (clock.elapsed() > timeout_ms) return false;
    QEventLoop loop;
    QTimer::singleShot(20, &loop, &QEventLoop::quit);
    loop.exec();
  }
  return true;
}

}  // namespace

QStringList take_screenshots(MainWindow& window, const ScreenshotOptions& options, QString* error) {
  QElapsedTimer clock;
  clock.start();
  QStringList saved;
  auto fail = [&](const QString& what) {
    *error = what;
    return saved;
  };
  if (!QDir().mkpath(options.directory)) return fail(QStringLiteral("%1: cannot create the folder").arg(options.directory));
  window.resize(options.window_width, options.window_height);
  window.show();
  ExploreTab* explore = window.explore();
  if (!explore->open_scenario(options.scenario)) return fail(window.last_error());
  if (!wait_until([&] { return explore->resolved() != nullptr && !explore->plan_task()->busy(); }, clock, options.timeout_ms)) {
    return fail(QStringLiteral("planning %1 timed out").arg(options.scenario));
  }
  explore->run_all();
  auto all_done = [&](SimulationResultsModel* m) {
    return !m->rows().empty() && m->finished_rows() == static_cast<int>(m->rows().size());
  };
  if (!wait_until([&] { return all_done(explore->results_model()); }, clock, options.timeout_ms)) {
    return fail(QStringLiteral("the simulations of %1 timed out").arg(options.scenario));
  }
  window.sweep()->run(sweep_gpu_counts(8, options.sweep_to));
  CompareTab* compare = window.compare();
  bool compared = false;
  QObject::connect(compare, &CompareTab::compared, [&compared] { compared = true; });
  if (!options.predicted_trace.isEmpty()) compare->open_files(options.predicted_trace, options.measured_trace);
  else compare->run_both(options.compare_scenario);
  if (!wait_until([&] { return all_done(window.sweep()->results_model()); }, clock, options.timeout_ms)) {
    return fail(QStringLiteral("the sweep timed out"));
  }
  if (!wait_until([&] { return compared || !window.last_error().isEmpty(); }, clock, options.timeout_ms)) {
    return fail(QStringLiteral("the comparison timed out"));
  }
  if (!compared) return fail(window.last_error());
  wait_until([&] { return !window.layout_tab()->task()->busy(); }, clock, options.timeout_ms);
  // What-if: one GPU of the scenario at half speed, beside the healthy cluster.
  WhatIfTab* whatif = window.whatif();
  WhatIfSettings slow = whatif->settings();
  slow.slow_gpus = 1;
  whatif->set_settings(slow);
  whatif->run();
  if (!wait_until([&] { return whatif->figures_model()->has_figures() || !whatif->error_text().isEmpty(); }, clock,
                  options.timeout_ms)) {
    return fail(QStringLiteral("the what-if timed out"));
  }
  // A refusal (a what-if of a pipeline's stages) is what the tab shows: its picture is taken too.
  static const char* names[MainWindow::kTabs] = {"explore", "layout", "timeline", "sweep", "compare", "whatif",
                                                  "validation"};
  for (int i = 0; i < MainWindow::kTabs; ++i) {
    window.tabs()->setCurrentIndex(i);
    QEventLoop loop;
    QTimer::singleShot(100, &loop, &QEventLoop::quit);  // layouts settle, charts paint
    loop.exec();
    const QString file = QDir(options.directory).filePath(QStringLiteral("%1-%2.png").arg(i + 1).arg(QString::fromLatin1(names[i])));
    QImage image = window.grab().toImage();
    if (options.width > 0) {
      image = image.scaledToWidth(options.width, Qt::SmoothTransformation).convertToFormat(QImage::Format_Indexed8, Qt::ThresholdDither | Qt::AvoidDither);
    }
    if (!image.save(file, "PNG")) return fail(QStringLiteral("%1: cannot write the PNG").arg(file));
    saved << file;
  }
  return saved;
}

}  // namespace ragged::gui
