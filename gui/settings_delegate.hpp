#pragma once
// The editor of a settings value: a combo box where the model offers
// choices (editable for the model row, so a config.json path can be typed),
// a line edit otherwise.

#include <QStyledItemDelegate>

namespace ragged::gui {

class SettingsDelegate : public QStyledItemDelegate {
  Q_OBJECT

 public:
  using QStyledItemDelegate::QStyledItemDelegate;

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
  void setEditorData(QWidget* editor, const QModelIndex& index) const override;
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override;
};

}  // namespace ragged::gui
