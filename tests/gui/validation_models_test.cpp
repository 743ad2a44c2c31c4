// The Validation tab's models on the residual table this binary was built
// with: every run a row (QAbstractItemModelTester), words filter the runs, the
// summary is the kept runs' arithmetic, errors sort by their size with absent
// ones last, and the tab shows what its filter keeps.

#include <QAbstractItemModelTester>
#include <QtTest>

#include <cmath>

#include "common/errors.hpp"
#include "gui/models/error_cells.hpp"
#include "gui/models/validation_rows.hpp"
#include "gui/models/validation_rows_model.hpp"
#include "sim/residual_table.hpp"

using namespace ragged;
using namespace ragged::gui;

class ValidationModelsTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void every_run_is_a_row() {
    const sim::ResidualTable& table = sim::shipped_residual_table();
    QVERIFY(table.rows.size() > 400);
    ValidationRowsModel model(table.rows);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), static_cast<int>(table.rows.size()));
    const sim::ResidualRow& first = table.rows.front();
    QCOMPARE(model.index(0, ValidationRowsModel::kRun).data().toString(), QString::fromStdString(first.id));
    QCOMPARE(model.index(0, ValidationRowsModel::kGpus).data(kValueRole).toLongLong(), first.gpus);
    QCOMPARE(model.index(0, ValidationRowsModel::kThroughputError).data().toString(),
             QString::fromStdString(error_text(first.throughput_error)));
  }

  void errors_read_as_signed_percentages() {
    QCOMPARE(error_text(0.051), std::string("+5.1%"));
    QCOMPARE(error_text(-0.12), std::string("-12.0%"));
    QCOMPARE(error_text(std::nullopt), std::string("-"));
  }

  void words_filter_and_the_summary_is_the_kept_runs() {
    sim::ResidualRow a{"cudnnfe-b200-x", "NVIDIA cudnn-frontend", "b200", 1, "ddp", "none", 1024, 0, 0.20, {}, "dense"};
    sim::ResidualRow b{"cudnnfe-h200-x", "NVIDIA cudnn-frontend", "h200", 1, "ddp", "none", 1024, 0, -0.05, {}, "dense"};
    sim::ResidualRow c{"foundry-a100-y", "MosaicML llm-foundry", "a100-80g", 8, "fsdp1", "full", 2048, 0, {}, 0.08,
                       "dense"};
    QVERIFY(row_matches(a, ""));
    QVERIFY(row_matches(a, "B200 CUDNNFE"));  // any case, every word
    QVERIFY(!row_matches(b, "b200 cudnnfe"));
    QVERIFY(row_matches(c, "llm-foundry full"));
    const ValidationSummary s = summarize({&a, &b, &c});
    QCOMPARE(s.rows, 3);
    QCOMPARE(s.compared, 2);
    QCOMPARE(s.mean_abs_error, (0.20 + 0.05) / 2);
    QCOMPARE(s.within_ten_percent, 0.5);
    QCOMPARE(s.worst_id, std::string("cudnnfe-b200-x"));
    QCOMPARE(s.memory_compared, 1);
    QCOMPARE(summary_text(s), std::string("3 runs; tokens/s compared on 2: mean |error| 12.5%, 50% within 10%, worst "
                                          "cudnnfe-b200-x (+20.0%); peak memory compared on 1: mean |error| 8.0%"));
  }

  void the_proxy_keeps_the_filtered_runs_largest_error_first_and_absent_last() {
    ValidationRowsModel model(sim::shipped_residual_table().rows);
    ValidationFilterModel proxy(&model);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.set_filter(QStringLiteral("cudnnfe-b200"));
    QCOMPARE(proxy.rowCount(), 18);  // batch IX: 3 kernels x 6 shapes on the B200
    for (const sim::ResidualRow* row : proxy.kept()) QVERIFY(row_matches(*row, "cudnnfe-b200"));
    proxy.set_filter({});
    for (Qt::SortOrder order : {Qt::DescendingOrder, Qt::AscendingOrder}) {
      proxy.sort(ValidationRowsModel::kThroughputError, order);
      const std::vector<const sim::ResidualRow*> kept = proxy.kept();
      QCOMPARE(static_cast<size_t>(proxy.rowCount()), kept.size());
      bool absent_seen = false;
      double previous = order == Qt::DescendingOrder ? INFINITY : -INFINITY;
      for (const sim::ResidualRow* row : kept) {
        if (!row->throughput_error) {
          absent_seen = true;
          continue;
        }
        QVERIFY2(!absent_seen, "a run without a compared throughput sorted before one with");
        const double size = std::fabs(*row->throughput_error);
        QVERIFY(order == Qt::DescendingOrder ? size <= previous : size >= previous);
        previous = size;
      }
      QVERIFY(absent_seen);  // the set has runs compared on memory only
    }
  }

  void a_run_opens_its_scenario_file_and_an_unknown_one_is_named() {
    const std::string folder = RAGGED_SOURCE_DIR "/validation";
    const std::string path = run_scenario(folder, "cudnnfe-b200-llama3.2-1b-cudnn-b1-s16384");
    QVERIFY2(QString::fromStdString(path).endsWith(
                 QStringLiteral("validation/scenarios/cudnnfe-b200-llama3.2-1b-cudnn-b1-s16384.textproto")),
             path.c_str());
    try {
      run_scenario(folder, "no-such-run");
      QFAIL("an unknown run must be an error");
    } catch (const InputError& e) {
      QVERIFY2(std::string(e.what()).find("no validation run 'no-such-run'") != std::string::npos, e.what());
    }
  }
};

QTEST_MAIN(ValidationModelsTest)
#include "validation_models_test.moc"
