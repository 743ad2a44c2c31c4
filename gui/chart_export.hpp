#pragma once
// Saving what a tab shows: any widget (a chart view, a layout or a
// timeline) as PNG, or as SVG through QSvgGenerator. The format follows the
// file's extension.

#include <QString>

class QWidget;

namespace ragged::gui {

// Throws nothing: returns an error line, empty on success.
QString export_widget(QWidget* widget, const QString& path);

}  // namespace ragged::gui
