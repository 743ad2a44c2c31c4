#include "gui/validation_tab.hpp"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/models/validation_rows.hpp"
#include "gui/models/validation_rows_model.hpp"
#include "sim/residual_table.hpp"
#include "validation/validation_set.hpp"

namespace ragged::gui {

ValidationTab::ValidationTab(QWidget* parent) : QWidget(parent) {
  const sim::ResidualTable& table = sim::shipped_residual_table();
  model_ = new ValidationRowsModel(table.rows, this);
  filter_ = new ValidationFilterModel(model_, this);
  filter_edit_ = new QLineEdit(this);
  filter_edit_->setPlaceholderText(QStringLiteral("filter: words of a run, stack, GPU, strategy or checkpointing "
                                                  "(e.g. cudnnfe-b200, fsdp2 h100, llm-foundry full)"));
  filter_edit_->setClearButtonEnabled(true);
  connect(filter_edit_, &QLineEdit::textChanged, this, &ValidationTab::set_filter);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableView(this);
  table_->setModel(filter_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(ValidationRowsModel::kThroughputError, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->hide();
  table_->setWordWrap(false);  // one line a run; the stack's whole name is its tooltip
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnWidth(ValidationRowsModel::kRun, 360);
  table_->setColumnWidth(ValidationRowsModel::kStack, 220);
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) { open_row(index.row()); });

  auto* controls = new QHBoxLayout();
  controls->addWidget(new QLabel(QStringLiteral("runs"), this));
  controls->addWidget(filter_edit_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);
  const QString origin = QString::fromStdString(sim::residual_table_source_path());
  auto* source = new QLabel(QStringLiteral("Published training runs simulated from their scenarios (error = predicted "
                                           "/ published - 1; sorted by its size), as %1 holds them: `ragged validate` "
                                           "recomputes them, docs/results/validation.md explains them; a double "
                                           "click opens a run's scenario in Explore.")
                                .arg(origin),
                            this);
  source->setWordWrap(true);
  layout->addWidget(source);
  refresh_summary();
}

void ValidationTab::set_filter(const QString& text) {
  if (filter_edit_->text() != text) filter_edit_->setText(text);  // typed here, or set by a caller
  filter_->set_filter(text);
  refresh_summary();
}

QString ValidationTab::summary() const { return summary_->text(); }

void ValidationTab::open_row(int row) {
  if (row < 0 || row >= filter_->rowCount()) return;
  const int source = filter_->mapToSource(filter_->index(row, 0)).row();
  try {
    Q_EMIT open_scenario(QString::fromStdString(
        run_scenario(validation::default_validation_dir().string(), model_->row(source).id)));
  } catch (const std::exception& e) {
    Q_EMIT error(QString::fromUtf8(e.what()));
  }
}

void ValidationTab::refresh_summary() {
  summary_->setText(QString::fromStdString(summary_text(summarize(filter_->kept()))));
}

}  // namespace ragged::gui
