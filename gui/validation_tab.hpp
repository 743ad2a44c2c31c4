#pragma once
// Validation: how far to trust a prediction. Every published training run of
// the validation set the binary was built with (validation/residuals.tsv,
// `ragged validate --write-residuals`), its regime and the prediction's error
// on tokens/s and peak memory, filtered by words (a stack, a GPU, a strategy,
// a run's name) with the kept runs' summary: mean |error|, the share within
// 10%, the worst. No simulation: the figures are the ones the bands of
// Explore come from. A double click opens the run's scenario in Explore.

#include <QWidget>

class QLabel;
class QLineEdit;
class QTableView;

namespace ragged::gui {

class ValidationFilterModel;
class ValidationRowsModel;

class ValidationTab : public QWidget {
  Q_OBJECT

 public:
  explicit ValidationTab(QWidget* parent = nullptr);

  void set_filter(const QString& text);
  QString summary() const;
  ValidationFilterModel* rows() { return filter_; }
  // Asks for row `row` of the filtered table to be opened: open_scenario(its
  // scenario file or shipped name), or error() when the validation folder
  // this binary was built from cannot say.
  void open_row(int row);

 Q_SIGNALS:
  void open_scenario(const QString& name_or_path);
  void error(const QString& message);

 private:
  void refresh_summary();

  ValidationRowsModel* model_ = nullptr;
  ValidationFilterModel* filter_ = nullptr;
  QLineEdit* filter_edit_ = nullptr;
  QLabel* summary_ = nullptr;
  QTableView* table_ = nullptr;
};

}  // namespace ragged::gui
