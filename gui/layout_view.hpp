#pragma once
// Draws the layouts of one unit side by side, one column per strategy: a
// bar per rank (rank 0 on top), tensors in colours, padding hatched, granule
// boundaries as ticks where they are far enough apart. Hovering shows the
// tensor, its interval and the rank's local units.

#include <QWidget>

#include <vector>

#include "gui/models/layout_geometry.hpp"

namespace ragged::gui {

class LayoutView : public QWidget {
  Q_OBJECT

 public:
  explicit LayoutView(QWidget* parent = nullptr);

  void set_layouts(std::vector<LayoutBars> layouts);
  const std::vector<LayoutBars>& layouts() const { return layouts_; }
  // What the tooltip says at a point of the widget, empty outside a piece.
  QString describe_at(QPoint point) const;

  QSize sizeHint() const override { return {900, 500}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  QRectF column_rect(int column) const;  // where one strategy's bars go

  std::vector<LayoutBars> layouts_;
};

QColor tensor_color(int tensor);

}  // namespace ragged::gui
