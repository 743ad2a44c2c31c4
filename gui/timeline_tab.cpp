#include "gui/timeline_tab.hpp"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include <chrono>

#include "traces/chrome_trace.hpp"
#include "traces/trace_io.hpp"
#include "traces/trace_names.hpp"

namespace ragged::gui {

TimelineTab::TimelineTab(QWidget* parent) : QWidget(parent) {
  auto* controls = new QHBoxLayout();
  auto* open = new QPushButton(QStringLiteral("Open trace…"), this);
  connect(open, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open a trace"), QString(),
                                                      QStringLiteral("Traces (*.pb *.trace *.json *.textproto);;All files (*)"));
    if (!path.isEmpty()) open_file(path);
  });
  controls->addWidget(open);
  controls->addWidget(new QLabel(QStringLiteral("rank"), this));
  rank_box_ = new QComboBox(this);
  connect(rank_box_, &QComboBox::activated, this, [this] { show_rank(rank_box_->currentData().toInt()); });
  controls->addWidget(rank_box_);
  status_ = new QLabel(QStringLiteral("wheel: zoom, drag: pan, double click: the whole step"), this);
  controls->addWidget(status_, 1);
  view_ = new TimelineView(this);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(view_, 1);
}

void TimelineTab::open_file(const QString& path) {
  status_->setText(QStringLiteral("reading %1…").arg(path));
  const std::string file = path.toStdString();
  task_.run([this, file, path]() -> std::function<void()> {
    const auto start = std::chrono::steady_clock::now();
    try {
      auto trace = std::make_shared<const traces::Trace>(traces::read_trace(file));
      Timeline timeline = build_timeline(*trace, kEveryRank);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      return [this, trace, timeline = std::move(timeline), path, ms, start]() mutable {
        trace_ = trace;
        label_ = path;
        view_->set_timeline(trace, std::move(timeline));
        view_->set_title(path);
        view_->grab();  // the first frame, drawn whether or not the window is exposed yet, counts in the opening time
        last_open_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const auto& meta = trace->metadata();
        status_->setText(QStringLiteral("%1 (%2, %3 GPUs): %4 events, %5 drawn, read and laid out in %6 ms, first "
                                        "frame (%7 bars) %8 ms after opening")
                             .arg(path, QString::fromStdString(std::string(traces::source_name(meta.source()))))
                             .arg(meta.world_size())
                             .arg(trace->events_size())
                             .arg(view_->timeline().rank == kEveryRank ? QStringLiteral("every rank")
                                                                       : QStringLiteral("rank %1").arg(view_->timeline().rank))
                             .arg(ms, 0, 'f', 1)
                             .arg(view_->drawn_bars())
                             .arg(last_open_ms_, 0, 'f', 1));
        Q_EMIT opened(status_->text());
        fill_rank_box();
      };
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      return [this, message] {
        status_->setText(message);
        Q_EMIT error(message);
      };
    }
  });
}

QString TimelineTab::export_perfetto(const QString& path) const {
  if (!trace_) return QStringLiteral("no trace to export: open one (File > Open trace) or simulate in Explore");
  try {
    traces::write_chrome_trace(*trace_, path.toStdString());
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

void TimelineTab::show_trace(std::shared_ptr<const traces::Trace> trace, const QString& label) {
  trace_ = std::move(trace);
  label_ = label;
  view_->set_title(label);
  show_rank(kEveryRank);
  fill_rank_box();
  status_->setText(QStringLiteral("%1: %2 events").arg(label).arg(trace_->events_size()));
}

void TimelineTab::fill_rank_box() {
  rank_box_->clear();
  const std::vector<int>& ranks = view_->timeline().ranks;
  if (ranks.size() > 1) rank_box_->addItem(QStringLiteral("every rank (%1)").arg(ranks.size()), kEveryRank);
  for (int r : ranks) rank_box_->addItem(QString::number(r), r);
}

void TimelineTab::show_rank(int rank) {
  if (!trace_) return;
  view_->set_timeline(trace_, build_timeline(*trace_, rank));
  view_->set_title(label_);
}

}  // namespace ragged::gui
