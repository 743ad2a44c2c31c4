// Training configs of other stacks opened in Explore, as a user would pick
// them with File > Open: the real example configs of tests/importers/data
// imported by the importers library (the window's settings filling what a
// config leaves open), the scenario loaded into the settings table, the
// import's notes shown, and a config that does not import reported as the
// CLI reports it.

#include <QCheckBox>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/explore_tab.hpp"
#include "gui/import_notes_dialog.hpp"
#include "gui/main_window.hpp"
#include "gui/models/simulation_results_model.hpp"
#include "scenarios/scenario_rules.hpp"

using namespace ragged;
using namespace ragged::gui;

namespace {

QString config(const char* name) { return QStringLiteral(RAGGED_SOURCE_DIR "/tests/importers/data/%1").arg(QLatin1String(name)); }

// What the settings table shows in the value cell of `row`.
QString shown(ExploreTab* explore, int row) {
  return explore->settings_model()->index(row, ScenarioSettingsModel::kValue).data(Qt::DisplayRole).toString();
}

QPushButton* notes_button(ExploreTab* explore) {
  for (auto* b : explore->findChildren<QPushButton*>()) {
    if (b->text() == QStringLiteral("Import notes…")) return b;
  }
  return nullptr;
}

void stop_auto_run(ExploreTab* explore) {
  for (auto* box : explore->findChildren<QCheckBox*>()) {
    if (box->text() == QStringLiteral("on every change")) box->setChecked(false);
  }
}

}  // namespace

class ImportSessionTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("ragged-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("import-session-test"));
    QSettings().clear();
    // An MPT model's config.json goes to the cache: a private one.
    QVERIFY(cache_.isValid());
    qputenv("XDG_CACHE_HOME", cache_.path().toLocal8Bit());
  }

  // torchtitan's Llama 3 8B job config leaves the GPU count open
  // (data_parallel_shard_degree = -1): the window's 16 GPUs fill it, the
  // rest comes from the config, and the scenario plans and simulates.
  void a_torchtitan_toml_opens_on_the_windows_gpus() {
    MainWindow window;
    window.show();
    ExploreTab* explore = window.explore();
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    explore->set_gpus_and_strategy(16, scenarios::RAGGED);
    QCOMPARE(explore->settings_model()->settings().gpus, 16);
    QVERIFY(!notes_button(explore)->isVisibleTo(explore));

    QVERIFY(explore->open_scenario(config("torchtitan_llama3_8b.toml")));
    QVERIFY(explore->imported());
    const scenarios::Scenario& s = explore->current()->scenario;
    QCOMPARE(QString::fromStdString(s.model().catalog()), QStringLiteral("llama3-8b"));
    QCOMPARE(scenarios::total_gpus(s), int64_t{16});
    QCOMPARE(s.training().micro_batch_size(), 1);  // training.local_batch_size
    QCOMPARE(s.training().sequence_length(), 8192);  // training.seq_len
    QCOMPARE(s.training().strategy(), scenarios::FSDP2);
    QCOMPARE(s.training().activation_checkpointing(), scenarios::SELECTIVE);
    // The settings table shows the imported scenario.
    QCOMPARE(shown(explore, ScenarioSettingsModel::kModel), QStringLiteral("llama3-8b"));
    QCOMPARE(shown(explore, ScenarioSettingsModel::kGpus), QStringLiteral("16"));
    QCOMPARE(shown(explore, ScenarioSettingsModel::kSequenceLength), QStringLiteral("8192"));

    // The notes: shown on opening, and again from the button.
    ImportNotesDialog* notes = explore->import_notes();
    QVERIFY(notes->isVisible());
    QVERIFY(notes->summary().startsWith(QStringLiteral("torchtitan_llama3_8b.toml (torchtitan job config): ")));
    QVERIFY(notes->summary().contains(QStringLiteral("from the window: cluster: 16 GPUs")));
    QVERIFY(notes->notes().contains(QStringLiteral("From the window's settings (Explore):")));
    QVERIFY(notes->notes().contains(QStringLiteral("Not mapped: logging, profiling and evaluation")));
    QVERIFY(notes->notes().contains(QStringLiteral("profiling.enable_profiling = true (line 8)")));
    QVERIFY(notes->notes().contains(QStringLiteral("training.mesh.dp_shard: 16  <- parallelism.data_parallel_shard_degree = -1 (line 40)")));
    notes->hide();
    QVERIFY(notes_button(explore)->isVisibleTo(explore));
    QTest::mouseClick(notes_button(explore), Qt::LeftButton);
    QVERIFY(notes->isVisible());

    // Planned and simulated like any scenario.
    QTRY_VERIFY_WITH_TIMEOUT(explore->resolved() != nullptr, 20000);
    QCOMPARE(scenarios::total_gpus(explore->resolved()->scenario()), int64_t{16});
    const auto fsdp2_done = [explore] {
      for (const auto& row : explore->results_model()->rows()) {
        if (row.strategy == "fsdp2" && row.outcome.state == RunState::kDone) return row.summary()->tokens_per_s_per_gpu() > 0;
      }
      return false;
    };
    QTRY_VERIFY_WITH_TIMEOUT(fsdp2_done(), 60000);

    // Another scenario: the notes no longer apply.
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QVERIFY(!explore->imported());
    QVERIFY(!notes->isVisible());
    QVERIFY(!notes_button(explore)->isVisibleTo(explore));
  }

  // llm-foundry's MPT-125M: the model is the YAML's own (an MPT config.json
  // written to the cache), the batch its global_train_batch_size over the
  // window's GPUs.
  void an_llm_foundry_yaml_brings_its_own_model() {
    MainWindow window;
    ExploreTab* explore = window.explore();
    stop_auto_run(explore);
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QVERIFY(explore->open_scenario(config("foundry_mpt-125m.yaml")));
    const scenarios::Scenario& s = explore->current()->scenario;
    QCOMPARE(QString::fromStdString(s.model().hf_config()), QStringLiteral("foundry_mpt-125m.config.json"));
    QVERIFY(explore->current()->base_dir.string().starts_with(cache_.path().toStdString()));  // where it was written
    QCOMPARE(scenarios::total_gpus(s), int64_t{8});
    QCOMPARE(s.training().micro_batch_size(), 16);                     // device_train_microbatch_size
    QCOMPARE(s.training().sequence_length(), 2048);                    // ${variables.max_seq_len}
    QCOMPARE(s.training().gradient_accumulation_steps(), 256 / 8 / 16);  // global_train_batch_size / GPUs / micro
    QVERIFY(explore->import_notes()->summary().contains(QStringLiteral("(llm-foundry training YAML)")));
    QTRY_VERIFY_WITH_TIMEOUT(explore->resolved() != nullptr, 20000);
    QCOMPARE(explore->resolved()->model.units.size(), size_t{12 + 2});  // n_layers: 12, the embedding and the head
  }

  // A DeepSpeed config names no model and leaves its micro-batch to the
  // Trainer ("auto"): the window's model, sequence length and micro-batch.
  void a_deepspeed_json_runs_the_windows_model() {
    MainWindow window;
    ExploreTab* explore = window.explore();
    stop_auto_run(explore);
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    const ScenarioSettings before = explore->settings_model()->settings();
    QVERIFY(explore->open_scenario(config("deepspeed_examples_ds_config_fp16_z3.json")));
    const scenarios::Scenario& s = explore->current()->scenario;
    QCOMPARE(QString::fromStdString(s.model().catalog()), QString::fromStdString(before.model));
    QCOMPARE(s.training().strategy(), scenarios::ZERO3);  // zero_optimization.stage = 3
    QCOMPARE(int64_t{s.training().micro_batch_size()}, before.micro_batch);
    QCOMPARE(int64_t{s.training().sequence_length()}, before.sequence_length);
    QCOMPARE(scenarios::total_gpus(s), before.gpus);
    QVERIFY(explore->import_notes()->notes().contains(QStringLiteral("training.micro_batch_size")));
  }

  // A config that does not import: the importer's message, located in the
  // file as `ragged scenario import` says it, and the scenario stays.
  void a_config_that_does_not_import_is_an_error() {
    MainWindow window;
    ExploreTab* explore = window.explore();
    stop_auto_run(explore);
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QTemporaryDir dir;
    const QString broken = dir.filePath(QStringLiteral("broken.toml"));
    QFile file(broken);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\ndata_parallel_shard_degree = 0\n");
    file.close();
    QVERIFY(!explore->open_scenario(broken));
    QVERIFY(window.last_error().startsWith(broken + QStringLiteral(":5:")));
    QVERIFY(window.last_error().contains(QStringLiteral("parallelism.data_parallel_shard_degree")));
    QVERIFY(!explore->imported());
    QCOMPARE(QString::fromStdString(explore->current()->scenario.model().catalog()), QStringLiteral("llama3-8b"));

    QProcess cli;  // the CLI's words for the same file
    cli.start(QStringLiteral(RAGGED_BINARY_DIR "/ragged"), {QStringLiteral("scenario"), QStringLiteral("import"), broken,
                                                           QStringLiteral("--gpus"), QStringLiteral("8")});
    QVERIFY(cli.waitForFinished(30000));
    const QString err = QString::fromLocal8Bit(cli.readAllStandardError()).trimmed();
    QVERIFY2(window.last_error().startsWith(err.mid(err.indexOf(broken))), qPrintable(err));
  }

 private:
  QTemporaryDir cache_;
};

QTEST_MAIN(ImportSessionTest)
#include "import_session_test.moc"
