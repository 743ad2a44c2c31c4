#include "gui/models/latest_task.hpp"

#include <QMetaObject>

#include <atomic>

namespace ragged::gui {

LatestTask::LatestTask(QObject* parent) : QObject(parent), latest_(std::make_shared<std::atomic<quint64>>(0)) {
  pool_.setMaxThreadCount(1);
}

LatestTask::~LatestTask() {
  *latest_ = ~quint64{0};  // every queued request is stale now
  pool_.waitForDone();
}

void LatestTask::run(Work work) {
  const quint64 generation = ++generation_;
  *latest_ = generation;
  ++pending_;
  pool_.start([this, generation, latest = latest_, work = std::move(work)] {
    std::function<void()> apply;
    if (*latest == generation) apply = work();
    QMetaObject::invokeMethod(
        this,
        [this, generation, apply = std::move(apply)] {
          --pending_;
          if (generation != generation_ || !apply) return;
          apply();
          Q_EMIT delivered();
        },
        Qt::QueuedConnection);
  });
}

}  // namespace ragged::gui
