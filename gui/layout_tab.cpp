#include "gui/layout_tab.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <chrono>

#include "gui/models/unit_layouts.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {

LayoutTab::LayoutTab(QWidget* parent) : QWidget(parent) {
  auto* controls = new QHBoxLayout();
  controls->addWidget(new QLabel(QStringLiteral("unit"), this));
  unit_box_ = new QComboBox(this);
  unit_box_->setMinimumContentsLength(12);
  connect(unit_box_, &QComboBox::activated, this, &LayoutTab::relayout);
  controls->addWidget(unit_box_);
  controls->addSpacing(16);
  for (scenarios::Strategy s : scenarios::all_strategies()) {
    auto* box = new QCheckBox(QString::fromStdString(scenarios::strategy_name(s)), this);
    box->setChecked(s == scenarios::RAGGED || s == scenarios::FSDP2);
    connect(box, &QCheckBox::toggled, this, &LayoutTab::relayout);
    controls->addWidget(box);
    strategy_boxes_.emplace_back(s, box);
  }
  controls->addStretch(1);
  status_ = new QLabel(this);
  view_ = new LayoutView(this);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(status_);
  layout->addWidget(view_, 1);
  layout->addWidget(new QLabel(QStringLiteral("Each bar is one rank's shard [0, S); colours are tensors, hatched is "
                                              "padding, ticks are granule (row or block) boundaries. Hover for the "
                                              "tensor and its local units."),
                               this));
}

std::vector<scenarios::Strategy> LayoutTab::checked_strategies() const {
  std::vector<scenarios::Strategy> out;
  for (const auto& [s, box] : strategy_boxes_) {
    if (box->isChecked()) out.push_back(s);
  }
  return out;
}

void LayoutTab::set_scenario(std::shared_ptr<const planner::ResolvedScenario> resolved) {
  const bool same_model = resolved_ && resolved && resolved_->model.name == resolved->model.name &&
                          resolved_->model.units.size() == resolved->model.units.size();
  resolved_ = std::move(resolved);
  if (!resolved_) return;
  if (!same_model) {
    unit_box_->clear();
    for (const auto& name : unit_names(resolved_->model)) unit_box_->addItem(QString::fromStdString(name));
    unit_box_->setCurrentIndex(most_interesting_unit(resolved_->model));
  }
  relayout();
}

void LayoutTab::set_unit(int unit_index) {
  unit_box_->setCurrentIndex(unit_index);
  relayout();
}

void LayoutTab::relayout() {
  if (!resolved_ || unit_box_->currentIndex() < 0) return;
  const auto resolved = resolved_;
  const int unit = unit_box_->currentIndex();
  const auto strategies = checked_strategies();
  status_->setText(QStringLiteral("planning %1…").arg(unit_box_->currentText()));
  task_.run([this, resolved, unit, strategies]() -> std::function<void()> {
    const auto start = std::chrono::steady_clock::now();
    try {
      auto layouts = unit_layouts(*resolved, unit, strategies, 512);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      return [this, layouts = std::move(layouts), resolved, unit, ms]() mutable {
        const auto& spec = resolved->model.units[static_cast<size_t>(unit)];
        status_->setText(QStringLiteral("%1 of %2: %3 tensors over a shard group of %4, planned in %5 ms")
                             .arg(QString::fromStdString(spec.name), QString::fromStdString(resolved->model.name))
                             .arg(spec.tensors.size())
                             .arg(resolved->scenario().training().shard_group_size())
                             .arg(ms, 0, 'f', 1));
        view_->set_layouts(std::move(layouts));
      };
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      return [this, message] { status_->setText(message); };
    }
  });
}

}  // namespace ragged::gui
