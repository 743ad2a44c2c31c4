#include "gui/settings_delegate.hpp"

#include <QComboBox>

#include "gui/models/scenario_settings_model.hpp"

namespace ragged::gui {

QWidget* SettingsDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  const QStringList choices = index.data(ScenarioSettingsModel::kChoicesRole).toStringList();
  if (choices.isEmpty()) return QStyledItemDelegate::createEditor(parent, option, index);
  auto* combo = new QComboBox(parent);
  combo->addItems(choices);
  combo->setEditable(index.row() == ScenarioSettingsModel::kModel);
  // Commit as soon as a choice is picked.
  connect(combo, &QComboBox::activated, this, [this, combo] {
    auto* self = const_cast<SettingsDelegate*>(this);
    Q_EMIT self->commitData(combo);
    Q_EMIT self->closeEditor(combo);
  });
  return combo;
}

void SettingsDelegate::setEditorData(QWidget* editor, const QModelIndex& index) const {
  if (auto* combo = qobject_cast<QComboBox*>(editor)) {
    combo->setCurrentText(index.data(Qt::EditRole).toString());
    return;
  }
  QStyledItemDelegate::setEditorData(editor, index);
}

void SettingsDelegate::setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const {
  if (auto* combo = qobject_cast<QComboBox*>(editor)) {
    model->setData(index, combo->currentText());
    return;
  }
  QStyledItemDelegate::setModelData(editor, model, index);
}

}  // namespace ragged::gui
