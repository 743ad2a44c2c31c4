#pragma once
// The notes of a config opened in Explore (torchtitan, llm-foundry,
// DeepSpeed): a one-line summary, the importer's warnings, and every field
// of the config, mapped (into what) or not mapped and why. Not modal: the
// scenario is planned and simulated while it is open.

#include <QDialog>

class QLabel;
class QPlainTextEdit;

namespace ragged::gui {

struct ConfigImport;

class ImportNotesDialog : public QDialog {
  Q_OBJECT

 public:
  explicit ImportNotesDialog(QWidget* parent = nullptr);

  void set_import(const ConfigImport& imported, const QString& path);
  QString summary() const;
  QString notes() const;

 private:
  QLabel* summary_ = nullptr;
  QPlainTextEdit* notes_ = nullptr;
};

}  // namespace ragged::gui
