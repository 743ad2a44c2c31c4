// scripts/dash-screenshot renders every tab offscreen, each image
// non-blank: its pixels vary (a blank or one-colour frame has no variance).

#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {

// Variance of the grey level over the image, sampled every 2 pixels.
double grey_variance(const QImage& image) {
  double sum = 0, sum2 = 0;
  int64_t n = 0;
  for (int y = 0; y < image.height(); y += 2) {
    for (int x = 0; x < image.width(); x += 2) {
      const double g = qGray(image.pixel(x, y));
      sum += g;
      sum2 += g * g;
      ++n;
    }
  }
  const double mean = sum / static_cast<double>(n);
  return sum2 / static_cast<double>(n) - mean * mean;
}

}  // namespace

class ScreenshotTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void every_tab_renders_non_blank() {
    QTemporaryDir dir;
    QProcess script;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("BUILD_DIR"), QStringLiteral(RAGGED_BINARY_DIR));
    script.setProcessEnvironment(env);
    script.start(QStringLiteral("bash"), {QStringLiteral(RAGGED_SOURCE_DIR "/scripts/dash-screenshot"), dir.path(),
                                          QStringLiteral("llama3-8b-8xh100"), QStringLiteral("--sweep-to"), QStringLiteral("256")});
    QVERIFY(script.waitForFinished(180000));
    QVERIFY2(script.exitCode() == 0, script.readAllStandardError().constData());
    const QStringList files = QString::fromLocal8Bit(script.readAllStandardOutput()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(files.size(), 7);  // Explore, Layout, Timeline, Sweep, Compare, What-if, Validation
    for (const QString& file : files) {
      const QImage image(file);
      QVERIFY2(!image.isNull(), qPrintable(file));
      QVERIFY(image.width() >= 800 && image.height() >= 500);
      const double variance = grey_variance(image);
      qInfo("%s: %dx%d, grey variance %.0f", qPrintable(QFileInfo(file).fileName()), image.width(), image.height(), variance);
      QVERIFY2(variance > 100, qPrintable(QStringLiteral("%1 looks blank (variance %2)").arg(file).arg(variance)));
    }
    // A blank frame has none: the check can fail.
    QImage blank(400, 300, QImage::Format_RGB32);
    blank.fill(Qt::white);
    QCOMPARE(grey_variance(blank), 0.0);
  }
};

QTEST_GUILESS_MAIN(ScreenshotTest)
#include "screenshot_test.moc"
