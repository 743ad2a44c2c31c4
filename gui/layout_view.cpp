#include "gui/layout_view.hpp"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include "gui/tooltip.hpp"
#include "common/units.hpp"

namespace ragged::gui {
namespace {

constexpr double kHeader = 34;  // strategy name and padding line
constexpr double kGap = 16;

}  // namespace

QColor tensor_color(int tensor) {
  // Golden-angle hues: neighbours differ.
  return QColor::fromHsv((tensor * 137) % 360, 140 + (tensor * 53) % 80, 200 + (tensor * 29) % 50);
}

LayoutView::LayoutView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(400, 240);
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::Base);
}

void LayoutView::set_layouts(std::vector<LayoutBars> layouts) {
  layouts_ = std::move(layouts);
  update();
}

QRectF LayoutView::column_rect(int column) const {
  const double n = std::max<double>(1, static_cast<double>(layouts_.size()));
  const double w = (width() - kGap * (n + 1)) / n;
  return {kGap + column * (w + kGap), kHeader, w, height() - kHeader - 8.0};
}

void LayoutView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (layouts_.empty()) {
    p.drawText(rect(), Qt::AlignCenter, QStringLiteral("no layout yet"));
    return;
  }
  QBrush hatch(QColor(120, 120, 120), Qt::BDiagPattern);
  for (size_t c = 0; c < layouts_.size(); ++c) {
    const LayoutBars& bars = layouts_[c];
    const QRectF area = column_rect(static_cast<int>(c));
    const double row_h = area.height() / std::max(1, bars.drawn_ranks);
    const double per_element = area.width() / std::max<double>(1, static_cast<double>(bars.shard_size));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(area.left(), 2, area.width(), kHeader - 2), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
               QString::fromStdString(layout_header(bars)));
    p.setPen(Qt::NoPen);
    for (const LayoutPiece& piece : bars.pieces) {
      const QRectF r(area.left() + static_cast<double>(piece.begin) * per_element, area.top() + piece.rank * row_h,
                     std::max(0.5, static_cast<double>(piece.length()) * per_element), std::max(0.5, row_h - (row_h > 4 ? 1 : 0)));
      if (piece.tensor < 0) {
        p.fillRect(r, QColor(235, 235, 235));
        p.fillRect(r, hatch);
        continue;
      }
      p.fillRect(r, tensor_color(piece.tensor));
      if (row_h >= 6) {
        p.setPen(QPen(QColor(0, 0, 0, 90), 0));
        for (int64_t mark : granule_marks(bars, piece, 1.0 / per_element)) {
          const double x = area.left() + static_cast<double>(mark) * per_element;
          p.drawLine(QPointF(x, r.top()), QPointF(x, r.top() + r.height() / 3));
        }
        p.setPen(Qt::NoPen);
      }
    }
    // Shard boundaries: the frame of the column.
    p.setPen(QPen(palette().color(QPalette::Mid), 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(area);
  }
}

QString LayoutView::describe_at(QPoint point) const {
  for (size_t c = 0; c < layouts_.size(); ++c) {
    const LayoutBars& bars = layouts_[c];
    const QRectF area = column_rect(static_cast<int>(c));
    if (!area.contains(point) || bars.drawn_ranks == 0) continue;
    const int rank = static_cast<int>((point.y() - area.top()) / (area.height() / bars.drawn_ranks));
    const auto element = static_cast<int64_t>((point.x() - area.left()) / area.width() * static_cast<double>(bars.shard_size));
    const LayoutPiece* piece = piece_at(bars, rank, element);
    if (piece == nullptr) return {};
    return QString::fromStdString(describe_piece(bars, *piece));
  }
  return {};
}

bool LayoutView::event(QEvent* event) {
  if (show_tooltip(this, event, [this](const QPoint& at) { return describe_at(at); })) return true;
  return QWidget::event(event);
}

}  // namespace ragged::gui
