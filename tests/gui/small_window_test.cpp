// The dashboard in a 1,100 x 700 window (issue 51): every tab lays out
// within it, and Explore's charts show what they print whole: every axis
// label, the memory breakdown's part names, and each bar's value.

#include <QAbstractBarSeries>
#include <QBarSet>
#include <QChartView>
#include <QGraphicsTextItem>
#include <QTextDocument>
#include <QtTest>

#include <memory>

#include "gui/chart_builders.hpp"
#include "gui/explore_tab.hpp"
#include "gui/main_window.hpp"
#include "gui/models/simulation_results_model.hpp"

using namespace ragged;
using namespace ragged::gui;

namespace {

QString one_line(QString text) {
  return text.replace(QChar(0x2028), QLatin1Char('/')).replace(QLatin1Char('\n'), QLatin1Char('/'));
}

// The visible text items of a chart's scene: axis labels, titles, bar values.
std::vector<QGraphicsTextItem*> text_items(QChartView* view) {
  std::vector<QGraphicsTextItem*> out;
  for (QGraphicsItem* item : view->scene()->items()) {
    auto* text = dynamic_cast<QGraphicsTextItem*>(item);
    if (text != nullptr && text->isVisible() && !text->toPlainText().isEmpty()) out.push_back(text);
  }
  return out;
}

// The glyphs' rectangle of a text item in scene coordinates (its document margin left out).
QRectF glyphs(const QGraphicsTextItem* item) {
  const double margin = item->document()->documentMargin();
  return item->mapRectToScene(item->boundingRect().adjusted(margin, margin, -margin, -margin));
}

}  // namespace

class SmallWindowTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // At 1,100 x 700 the window was held at 1,255 pixels wide by its charts' minimum sizes, and titles were
  // cut. Every tab lays out within 1,100 x 700, and the memory breakdown's title is on lines short enough
  // for its third of the charts.
  void every_tab_fits_1100_by_700() {
    MainWindow window;
    window.resize(1100, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    for (int tab = 0; tab < MainWindow::kTabs; ++tab) {
      window.tabs()->setCurrentIndex(tab);
      QCoreApplication::processEvents();
      const QSize least = window.minimumSizeHint();
      QVERIFY2(least.width() <= 1100 && least.height() <= 700,
               qPrintable(QStringLiteral("tab %1 needs %2 x %3").arg(tab).arg(least.width()).arg(least.height())));
      QCOMPARE(window.width(), 1100);
    }
    std::unique_ptr<QChart> chart(memory_breakdown_chart({{"activations", 1LL << 30, "activations"}}, 80LL << 30, 81LL << 30));
    for (const QString& line : chart->title().split(QStringLiteral("<br>"))) QVERIFY2(line.size() <= 36, qPrintable(line));
  }

  // GPT-OSS-120B on 256 H800s, where FSDP2's throughput is under half ragged's: at 1,100 x 700 the per-unit
  // chart cut "layers (mean of 36)" to "layers (...", the memory breakdown "allocator overhead" to
  // "allocator ove...", and FSDP2's bar printed "30.42" for 680.42 tokens/s (its value, inside a bar
  // shorter than the text, cut at the plot's left edge). Every label of Explore's five charts shows whole:
  // no axis label elided, each bar's value (as Qt Charts prints it) inside the plot area.
  void explores_charts_show_their_labels_whole() {
    MainWindow window;
    window.resize(1100, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ExploreTab* explore = window.explore();
    QVERIFY(explore->open_scenario(QStringLiteral("gpt-oss-120b-256xh800")));
    QTRY_VERIFY_WITH_TIMEOUT(!explore->results_model()->rows().empty() &&
                                 explore->results_model()->finished_rows() == static_cast<int>(explore->results_model()->rows().size()),
                             120000);
    QTest::qWait(100);
    int labels = 0, values = 0;
    for (QWidget* widget : explore->exportable_views()) {
      auto* view = qobject_cast<QChartView*>(widget);
      QVERIFY(view != nullptr);
      const QString chart_title = one_line(view->chart()->title());
      const std::vector<QGraphicsTextItem*> texts = text_items(view);
      for (QGraphicsTextItem* label : texts) {
        ++labels;
        QVERIFY2(!label->toPlainText().endsWith(QStringLiteral("...")),
                 qPrintable(chart_title + QStringLiteral(": ") + one_line(label->toPlainText()) +
                            QStringLiteral(" in a plot %1 wide").arg(view->chart()->plotArea().width())));
      }
      const QRectF plot = view->chart()->mapRectToScene(view->chart()->plotArea()).adjusted(-1, -1, 1, 1);
      for (QAbstractSeries* series : view->chart()->series()) {
        auto* bars = qobject_cast<QAbstractBarSeries*>(series);
        if (bars == nullptr || !bars->isLabelsVisible()) continue;
        for (QBarSet* set : bars->barSets()) {
          for (int i = 0; i < set->count(); ++i) {
            const QString value = QString::number(set->at(i), 'g', bars->labelsPrecision());
            bool inside = false;
            QRectF seen;
            for (QGraphicsTextItem* label : texts) {
              if (label->toPlainText() != value) continue;
              seen = glyphs(label);
              inside = inside || plot.contains(seen);
            }
            QVERIFY2(inside, qPrintable(chart_title + QStringLiteral(": the value %1 of bar %2 at x %3..%4, the plot %5..%6")
                                            .arg(value).arg(i).arg(seen.left()).arg(seen.right()).arg(plot.left()).arg(plot.right())));
            ++values;
          }
        }
      }
    }
    QVERIFY(labels > 40);  // the axes' labels were read
    QVERIFY(values >= 3 * 6 + 6);  // six strategies in three charts, and the memory parts
  }
};

QTEST_MAIN(SmallWindowTest)
#include "small_window_test.moc"
