#pragma once
// The views' tooltips: a QEvent::ToolTip shows the text describe(pos) gives
// for the point under the cursor, or hides the tooltip where it gives none.

#include <QEvent>
#include <QHelpEvent>
#include <QString>
#include <QToolTip>
#include <QWidget>

namespace ragged::gui {

// True when `event` was a tooltip request (handled); false for any other event.
template <typename Describe>
bool show_tooltip(QWidget* widget, QEvent* event, Describe describe) {
  if (event->type() != QEvent::ToolTip) return false;
  auto* help = static_cast<QHelpEvent*>(event);
  const QString text = describe(help->pos());
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(help->globalPos(), text, widget);
  return true;
}

}  // namespace ragged::gui
