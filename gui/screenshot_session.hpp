#pragma once
// Fills every tab of a window for a scenario (simulations, layout,
// timeline, a sweep, a predicted-against-measured comparison) and saves
// each tab as DIR/<n>-<tab>.png: what scripts/dash-screenshot runs, offscreen.

#include <QObject>
#include <QString>
#include <QStringList>

#include <cstdint>

namespace ragged::gui {

class MainWindow;

struct ScreenshotOptions {
  QString scenario = QStringLiteral("gpt-oss-120b-256xh800");
  QString directory;
  QString predicted_trace, measured_trace;  // empty: simulate and run tiny-llama-4xcpu here
  QString compare_scenario = QStringLiteral("tiny-llama-4xcpu");
  int64_t sweep_to = 16384;  // the sweep's largest GPU count
  int width = 0;             // scale the images to this width (0: as drawn); 256 colours when scaled
  int window_width = 1600, window_height = 950;  // the window drawn (--window 1100x700: a small screen)
  int timeout_ms = 240000;
};

// Blocks (running the event loop) until every tab is filled and saved.
// Returns the saved files; throws nothing: problems are in `error`.
QStringList take_screenshots(MainWindow& window, const ScreenshotOptions& options, QString* error);

}  // namespace ragged::gui
