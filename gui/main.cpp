// ragged-dash: the dashboard. `ragged-dash [scenario]` opens a shipped
// scenario or a file in Explore; --trace opens a trace in Timeline;
// --compare P M opens a predicted and a measured trace in Compare;
// --screenshots DIR fills every tab and saves it as PNG (offscreen: set
// QT_QPA_PLATFORM=offscreen, as scripts/dash-screenshot does).

#include <QApplication>
#include <QCommandLineParser>
#include <QTabWidget>

#include <cstdio>

#include "gui/compare_tab.hpp"
#include "gui/explore_tab.hpp"
#include "gui/main_window.hpp"
#include "gui/screenshot_session.hpp"
#include "gui/timeline_tab.hpp"
#include "scenarios/scenario_loader.hpp"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("ragged"));
  QApplication::setApplicationName(QStringLiteral("ragged-dash"));
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Explore sharding trade-offs and compare predicted with measured runs"));
  parser.addHelpOption();
  parser.addPositionalArgument(QStringLiteral("scenario"), QStringLiteral("A shipped scenario, a scenario file, or a torchtitan/llm-foundry/DeepSpeed config to import"));
  QCommandLineOption trace(QStringLiteral("trace"), QStringLiteral("Open a trace in Timeline"), QStringLiteral("file"));
  QCommandLineOption compare(QStringLiteral("compare"), QStringLiteral("Open PREDICTED,MEASURED traces in Compare"),
                             QStringLiteral("predicted,measured"));
  QCommandLineOption screenshots(QStringLiteral("screenshots"), QStringLiteral("Fill every tab and save it as DIR/<n>-<tab>.png, then exit"),
                                 QStringLiteral("dir"));
  QCommandLineOption timed(QStringLiteral("time-open"), QStringLiteral("With --trace: print how long opening it took, then exit"));
  QCommandLineOption sweep_to(QStringLiteral("sweep-to"), QStringLiteral("With --screenshots: the sweep's largest GPU count (default 16384)"),
                              QStringLiteral("gpus"), QStringLiteral("16384"));
  QCommandLineOption width(QStringLiteral("width"), QStringLiteral("With --screenshots: scale the images to this width, 256 colours"),
                           QStringLiteral("pixels"), QStringLiteral("0"));
  QCommandLineOption window_size(QStringLiteral("window"), QStringLiteral("With --screenshots: the window's size (default 1600x950)"),
                                 QStringLiteral("WxH"), QStringLiteral("1600x950"));
  parser.addOptions({trace, compare, screenshots, sweep_to, timed, width, window_size});
  parser.process(app);
  const QStringList positional = parser.positionalArguments();
  const QStringList traces = parser.value(compare).split(QLatin1Char(','), Qt::SkipEmptyParts);
  if (parser.isSet(compare) && traces.size() != 2) {
    std::fprintf(stderr, "ragged-dash: error: --compare takes PREDICTED,MEASURED\n");
    return 2;
  }

  ragged::gui::MainWindow window;
  if (parser.isSet(screenshots)) {
    ragged::gui::ScreenshotOptions options;
    options.directory = parser.value(screenshots);
    if (!positional.isEmpty()) options.scenario = positional.front();
    options.sweep_to = parser.value(sweep_to).toLongLong();
    options.width = parser.value(width).toInt();
    const QStringList size = parser.value(window_size).split(QLatin1Char('x'));
    options.window_width = size.size() == 2 ? size[0].toInt() : 0;
    options.window_height = size.size() == 2 ? size[1].toInt() : 0;
    if (options.window_width < 400 || options.window_height < 300) {
      std::fprintf(stderr, "ragged-dash: error: --window %s: give WxH, at least 400x300 (e.g. 1100x700)\n",
                   qPrintable(parser.value(window_size)));
      return 2;
    }
    if (options.sweep_to < 8) {
      std::fprintf(stderr, "ragged-dash: error: --sweep-to %s: give a GPU count of at least 8\n", qPrintable(parser.value(sweep_to)));
      return 2;
    }
    if (traces.size() == 2) {
      options.predicted_trace = traces[0];
      options.measured_trace = traces[1];
    }
    QString error;
    const QStringList saved = ragged::gui::take_screenshots(window, options, &error);
    for (const QString& file : saved) std::printf("%s\n", qPrintable(file));
    if (!error.isEmpty()) {
      std::fprintf(stderr, "ragged-dash: error: %s\n", qPrintable(error));
      return 1;
    }
    return 0;
  }
  window.show();
  // The scenario named, else the one open when the window last closed, else the default.
  const bool opened = positional.isEmpty() ? window.reopen_last_scenario() : window.explore()->open_scenario(positional.front());
  if (!opened) window.explore()->open_scenario(QString::fromLatin1(ragged::scenarios::kDefaultScenario));
  if (parser.isSet(trace)) {
    window.tabs()->setCurrentWidget(window.timeline());
    if (parser.isSet(timed)) {
      QObject::connect(window.timeline(), &ragged::gui::TimelineTab::opened, [](const QString& summary) {
        std::printf("%s\n", qPrintable(summary));
        QApplication::exit(0);
      });
      QObject::connect(window.timeline(), &ragged::gui::TimelineTab::error, [](const QString& message) {
        std::fprintf(stderr, "ragged-dash: error: %s\n", qPrintable(message));
        QApplication::exit(2);
      });
    }
    window.timeline()->open_file(parser.value(trace));
  }
  if (traces.size() == 2) {
    window.tabs()->setCurrentWidget(window.compare());
    window.compare()->open_files(traces[0], traces[1]);
  }
  return QApplication::exec();
}
