#pragma once
// Work that only its latest request matters for (a plan after each edit, a
// trace being opened): it runs on a background thread, and what it hands
// back runs on this object's thread unless a newer request came meanwhile.
// A request that is already stale when its turn comes is skipped.

#include <QObject>
#include <QThreadPool>

#include <atomic>
#include <functional>
#include <memory>

namespace ragged::gui {

class LatestTask : public QObject {
  Q_OBJECT

 public:
  // `work` runs in the background and returns what to do with its result
  // on this object's thread (it must not throw: report errors through it).
  using Work = std::function<std::function<void()>()>;

  explicit LatestTask(QObject* parent = nullptr);
  ~LatestTask() override;

  void run(Work work);
  bool busy() const { return pending_ > 0; }
  bool wait(int msecs = -1) { return pool_.waitForDone(msecs); }  // the background part only

 Q_SIGNALS:
  void delivered();  // the latest request's result has been applied

 private:
  QThreadPool pool_;
  quint64 generation_ = 0;
  std::shared_ptr<std::atomic<quint64>> latest_;
  int pending_ = 0;
};

}  // namespace ragged::gui
