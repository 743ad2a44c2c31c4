#include "gui/models/whatif_figures_model.hpp"

namespace ragged::gui {

WhatIfFiguresModel::WhatIfFiguresModel(QObject* parent) : QAbstractTableModel(parent) { clear(); }

int WhatIfFiguresModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int WhatIfFiguresModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant WhatIfFiguresModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const WhatIfRow& row = rows_[static_cast<size_t>(index.row())];
  if (role == kValueRole && index.column() == kValue && has_figures_) return row.value;
  if (role == Qt::ToolTipRole && index.column() == kValue) return QString::fromStdString(row.text);
  if (role != Qt::DisplayRole) return {};
  return QString::fromStdString(index.column() == kFigure ? row.name : row.text);
}

QVariant WhatIfFiguresModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= kColumns) return {};
  return section == kFigure ? QStringLiteral("figure") : QStringLiteral("value");
}

void WhatIfFiguresModel::set_figures(const WhatIfFigures& figures) {
  beginResetModel();
  figures_ = figures;
  has_figures_ = true;
  rows_ = whatif_rows(figures_);
  endResetModel();
}

void WhatIfFiguresModel::clear() {
  beginResetModel();
  figures_ = {};
  has_figures_ = false;
  rows_ = whatif_rows(figures_);
  for (WhatIfRow& row : rows_) row.text = "-";
  endResetModel();
}

QString WhatIfFiguresModel::text(WhatIfFigure figure) const {
  return QString::fromStdString(rows_[static_cast<size_t>(figure)].text);
}

double WhatIfFiguresModel::value(WhatIfFigure figure) const { return rows_[static_cast<size_t>(figure)].value; }

}  // namespace ragged::gui
