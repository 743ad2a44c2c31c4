#pragma once
// The What-if tab's figures as a two-column table (figure, value): one row
// per WhatIfFigure, always there; "-" until a simulation has reported.
// kValueRole gives the number behind a value (seconds, fraction, rank).

#include <QAbstractTableModel>

#include <vector>

#include "gui/models/whatif_figures.hpp"

namespace ragged::gui {

class WhatIfFiguresModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kFigure, kValue, kColumns };
  static constexpr int kValueRole = Qt::UserRole + 1;

  explicit WhatIfFiguresModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void set_figures(const WhatIfFigures& figures);
  void clear();  // every value back to "-"
  bool has_figures() const { return has_figures_; }
  const WhatIfFigures& figures() const { return figures_; }
  QString text(WhatIfFigure figure) const;
  double value(WhatIfFigure figure) const;

 private:
  std::vector<WhatIfRow> rows_;
  WhatIfFigures figures_;
  bool has_figures_ = false;
};

}  // namespace ragged::gui
