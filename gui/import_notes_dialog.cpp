#include "gui/import_notes_dialog.hpp"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QVBoxLayout>

#include "gui/models/config_import.hpp"

namespace ragged::gui {

ImportNotesDialog::ImportNotesDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(QStringLiteral("Imported config"));
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  notes_ = new QPlainTextEdit(this);
  notes_->setReadOnly(true);
  notes_->setLineWrapMode(QPlainTextEdit::NoWrap);
  notes_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::hide);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(summary_);
  layout->addWidget(notes_, 1);
  layout->addWidget(buttons);
  resize(820, 520);
}

void ImportNotesDialog::set_import(const ConfigImport& imported, const QString& path) {
  summary_->setText(QString::fromStdString(import_summary(imported, path.toStdString())));
  QString text;
  for (const std::string& warning : imported.warnings) text += QStringLiteral("warning: %1\n").arg(QString::fromStdString(warning));
  if (!text.isEmpty()) text += QLatin1Char('\n');
  notes_->setPlainText(text + QString::fromStdString(imported.notes));
}

QString ImportNotesDialog::summary() const { return summary_->text(); }
QString ImportNotesDialog::notes() const { return notes_->toPlainText(); }

}  // namespace ragged::gui
