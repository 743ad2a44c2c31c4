#include "gui/chart_export.hpp"

#include <QFileInfo>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QWidget>

namespace ragged::gui {

QString export_widget(QWidget* widget, const QString& path) {
  if (widget == nullptr) return QStringLiteral("nothing to export");
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("svg")) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(widget->size());
    svg.setViewBox(QRect(QPoint(0, 0), widget->size()));
    svg.setTitle(QStringLiteral("ragged-dash"));
    QPainter painter;
    if (!painter.begin(&svg)) return QStringLiteral("%1: cannot write an SVG there").arg(path);
    widget->render(&painter);
    painter.end();
    return QFileInfo(path).size() > 0 ? QString() : QStringLiteral("%1: nothing was written").arg(path);
  }
  if (suffix != QLatin1String("png")) return QStringLiteral("%1: export as .png or .svg").arg(path);
  if (!widget->grab().save(path, "PNG")) return QStringLiteral("%1: cannot write a PNG there").arg(path);
  return {};
}

}  // namespace ragged::gui
