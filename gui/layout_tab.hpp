#pragma once
// Layout: one unit's flat buffer under several strategies side by side, a
// bar per rank (GPT-OSS's experts at 256 GPUs: RaggedShard against FSDP2's
// even split). Layouts are planned in the background.

#include <QWidget>

#include <memory>

#include "gui/layout_view.hpp"
#include "gui/models/latest_task.hpp"
#include "planner/resolved_scenario.hpp"

class QCheckBox;
class QComboBox;
class QLabel;

namespace ragged::gui {

class LayoutTab : public QWidget {
  Q_OBJECT

 public:
  explicit LayoutTab(QWidget* parent = nullptr);

  void set_scenario(std::shared_ptr<const planner::ResolvedScenario> resolved);
  void set_unit(int unit_index);
  LayoutView* view() { return view_; }
  LatestTask* task() { return &task_; }

 private:
  void relayout();
  std::vector<scenarios::Strategy> checked_strategies() const;

  std::shared_ptr<const planner::ResolvedScenario> resolved_;
  LatestTask task_;
  QComboBox* unit_box_ = nullptr;
  std::vector<std::pair<scenarios::Strategy, QCheckBox*>> strategy_boxes_;
  QLabel* status_ = nullptr;
  LayoutView* view_ = nullptr;
};

}  // namespace ragged::gui
