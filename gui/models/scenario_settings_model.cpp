#include "gui/models/scenario_settings_model.hpp"

#include <cstdint>
#include <exception>
#include <limits>

#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {
namespace {

struct RowInfo {
  const char* name;
  const char* help;
};

constexpr RowInfo kRowInfo[ScenarioSettingsModel::kRows] = {
    {"model", "A catalog model or a Hugging Face config.json"},
    {"GPU", "GPU preset (peak FLOP/s, HBM, NVLink)"},
    {"GPUs", "Total GPUs"},
    {"GPUs per node", "GPUs in one NVLink island"},
    {"nodes", "Nodes of GPUs per node: sets the GPUs to nodes x GPUs per node"},
    {"NICs per node", "Network interfaces per node"},
    {"NIC Gbit/s", "Bandwidth of one NIC, per direction"},
    {"strategy", "Layout strategy"},
    {"granularity", "element, rows:K, block:RxC or matrix"},
    {"shard group",
     "Ranks FSDP shards one model copy over (dp_shard x cp); fewer than a tp rank's is HSDP. "
     "Follows the GPUs until a value is typed; auto gives it back to the scenario"},
    {"tp", "Tensor-parallel ranks: every block's matrices split, inside a node"},
    {"cp", "Context-parallel ranks: each sequence split, keys and values gathered"},
    {"ep", "Expert-parallel ranks (mixtures of experts): each holds 1/ep of the routed experts"},
    {"pp",
     "Pipeline stages: the layers split over pp ranks, the step's micro-batches (at least pp) run through "
     "them in the scenario's schedule (1F1B by default)"},
    {"schedule", "With pp above 1, the stages' schedule: 1f1b, interleaved (2 model chunks a rank), gpipe or zb-h1"},
    {"accumulation", "Micro-batches a step (gradient accumulation; a pipeline's micro-batches)"},
    {"micro-batch", "Sequences per data-parallel rank per micro-step"},
    {"sequence length", "Tokens per sequence"},
    {"checkpointing", "Activation checkpointing"},
    {"experts checkpointing",
     "Under ep, the routed experts' own: block (the block's mode), none, selective, or full "
     "(their layer rerun in the backward, as Megatron-Core's --recompute-modules moe)"},
    {"experts all-to-all overlap",
     "Megatron-Core's --overlap-moe-expert-parallel-comm: under ep and interleaved pipeline stages, one "
     "micro-batch's dispatch and combine beside another's compute (on or off)"},
    {"prefetch", "Units all-gathered ahead of compute"},
    {"optimizer", "The optimizer, its settings at their defaults"},
};

QStringList to_list(const std::vector<std::string>& names) {
  QStringList out;
  for (const auto& n : names) out << QString::fromStdString(n);
  return out;
}

// A whole number the scenario's int32 fields hold; their own ranges are
// checked when the settings are applied, with the CLI's words.
bool positive(const QString& text, int64_t& out) {
  bool ok = false;
  const qlonglong v = text.trimmed().toLongLong(&ok);
  if (!ok || v < 1 || v > std::numeric_limits<int32_t>::max()) return false;
  out = v;
  return true;
}

}  // namespace

int ScenarioSettingsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kRows; }
int ScenarioSettingsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant ScenarioSettingsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == kName ? QStringLiteral("setting") : section == kValue ? QStringLiteral("value") : QVariant();
}

Qt::ItemFlags ScenarioSettingsModel::flags(const QModelIndex& index) const {
  if (!index.isValid() || !checkIndex(index)) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() == kValue) f |= Qt::ItemIsEditable;
  return f;
}

QString ScenarioSettingsModel::value_text(int row) const {
  const ScenarioSettings& s = settings_;
  switch (row) {
    case kModel: return QString::fromStdString(s.model);
    case kGpuPreset: return QString::fromStdString(s.gpu_preset);
    case kGpus: return QString::number(s.gpus);
    case kGpusPerNode: return QString::number(s.gpus_per_node);
    case kNodes: return QString::number(s.nodes());
    case kNicsPerNode: return QString::number(s.nics_per_node);
    case kNicBandwidth: return QString::number(s.nic_gbits_per_s);
    case kStrategy: return QString::fromStdString(scenarios::strategy_name(s.strategy));
    case kGranularity: return QString::fromStdString(s.granularity);
    case kShardGroup: return QString::number(s.shard_group);
    case kTp: return QString::number(s.tp);
    case kCp: return QString::number(s.cp);
    case kEp: return QString::number(s.ep);
    case kPp:
      return QString::number(s.pp);
    case kSchedule:
      return QString::fromStdString(scenarios::schedule_name(s.schedule));
    case kAccumulation:
      return QString::number(s.accumulation);
    case kMicroBatch: return QString::number(s.micro_batch);
    case kSequenceLength: return QString::number(s.sequence_length);
    case kCheckpointing: return QString::fromStdString(scenarios::checkpointing_name(s.checkpointing));
    case kExpertsCheckpointing:
      return s.experts_checkpointing == scenarios::CHECKPOINTING_UNSPECIFIED
                 ? QStringLiteral("block")
                 : QString::fromStdString(scenarios::checkpointing_name(s.experts_checkpointing));
    case kExpertsOverlap:
      return s.experts_overlap ? QStringLiteral("on") : QStringLiteral("off");
    case kPrefetch: return QString::number(s.prefetch_depth);
    case kOptimizer: return QString::fromStdString(s.optimizer);
    default: return {};
  }
}

QVariant ScenarioSettingsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const int row = index.row();
  if (role == Qt::ToolTipRole) return QString::fromLatin1(kRowInfo[row].help);
  if (index.column() == kName) return role == Qt::DisplayRole ? QVariant(QString::fromLatin1(kRowInfo[row].name)) : QVariant();
  if (role == Qt::DisplayRole || role == Qt::EditRole) return value_text(row);
  if (role == kChoicesRole) {
    switch (row) {
      case kModel: return to_list(catalog_model_names());
      case kGpuPreset: return to_list(gpu_preset_names());
      case kStrategy: {
        QStringList names;
        for (auto s : scenarios::all_strategies()) names << QString::fromStdString(scenarios::strategy_name(s));
        return names;
      }
      case kCheckpointing: return QStringList{"none", "full", "selective"};
      case kSchedule:
        return QStringList{"1f1b", "interleaved", "gpipe", "zb-h1"};
      case kExpertsCheckpointing:
        return QStringList{"block", "none", "full", "selective"};
      case kExpertsOverlap:
        return QStringList{"off", "on"};
      case kOptimizer: return to_list(scenarios::optimizer_names());
      default: return QStringList{};
    }
  }
  return {};
}

bool ScenarioSettingsModel::parse_into(int row, const QString& value, ScenarioSettings& s) const {
  const std::string text = value.trimmed().toStdString();
  try {
    switch (row) {
      case kModel: s.model = text; return !text.empty();
      case kGpuPreset: s.gpu_preset = text; return !text.empty();
      case kGpus: return positive(value, s.gpus);
      case kGpusPerNode: return positive(value, s.gpus_per_node);
      case kNodes: {
        int64_t nodes = 0;
        if (!positive(value, nodes)) return false;
        s.gpus = nodes * s.gpus_per_node;
        return true;
      }
      case kNicsPerNode: return positive(value, s.nics_per_node);
      case kNicBandwidth: {
        bool ok = false;
        s.nic_gbits_per_s = value.toDouble(&ok);
        return ok && s.nic_gbits_per_s > 0;
      }
      case kStrategy: s.strategy = scenarios::parse_strategy(text); return true;
      case kGranularity: s.granularity = text; return !text.empty();
      case kShardGroup: {
        const QString t = value.trimmed();
        if (t.isEmpty() || t.compare(QStringLiteral("auto"), Qt::CaseInsensitive) == 0) {
          s.shard_group_written = false;
          return true;
        }
        s.shard_group_written = true;
        return positive(value, s.shard_group);
      }
      // A new tp or cp re-derives the shard group, as --tp/--cp (scenarios::with_mesh).
      case kTp: s.shard_group_written = false; return positive(value, s.tp);
      case kCp: s.shard_group_written = false; return positive(value, s.cp);
      case kEp: return positive(value, s.ep);
      case kPp:
        s.shard_group_written = false;
        return positive(value, s.pp);
      case kSchedule:
        s.schedule = scenarios::parse_schedule(text);
        return true;
      case kAccumulation:
        return positive(value, s.accumulation);
      case kMicroBatch: return positive(value, s.micro_batch);
      case kSequenceLength: return positive(value, s.sequence_length);
      case kCheckpointing: s.checkpointing = scenarios::parse_checkpointing(text); return true;
      case kExpertsCheckpointing:
        s.experts_checkpointing =
            text == "block" ? scenarios::CHECKPOINTING_UNSPECIFIED : scenarios::parse_checkpointing(text);
        return true;
      case kExpertsOverlap:
        s.experts_overlap = text == "on";
        return text == "on" || text == "off";
      case kPrefetch: {
        bool ok = false;
        const int v = value.toInt(&ok);
        s.prefetch_depth = v;
        return ok && v >= 0;
      }
      case kOptimizer: {
        for (const auto& name : scenarios::optimizer_names()) {
          if (name == text) {
            s.optimizer = text;
            return true;
          }
        }
        return false;
      }
      default: return false;
    }
  } catch (const std::exception&) {
    return false;  // an unknown strategy or checkpointing name
  }
}

bool ScenarioSettingsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !index.isValid() || !checkIndex(index) || !(flags(index) & Qt::ItemIsEditable)) {
    return false;
  }
  return set_value(static_cast<Row>(index.row()), value.toString());
}

bool ScenarioSettingsModel::set_value(Row row, const QString& value) {
  ScenarioSettings next = settings_;
  if (!parse_into(row, value, next)) {
    Q_EMIT edit_refused(QStringLiteral("%1: '%2' is not a value it takes (%3)")
                            .arg(QString::fromLatin1(kRowInfo[row].name), value.trimmed(), QString::fromLatin1(kRowInfo[row].help)));
    return false;
  }
  if (next == settings_) return true;
  settings_ = next;
  Q_EMIT dataChanged(index(0, kValue), index(kRows - 1, kValue));  // nodes and GPUs follow each other
  Q_EMIT settings_changed();
  return true;
}

void ScenarioSettingsModel::follow(const ScenarioSettings& applied) {
  if (settings_.shard_group_written || settings_.shard_group == applied.shard_group) return;
  settings_.shard_group = applied.shard_group;
  Q_EMIT dataChanged(index(kShardGroup, kValue), index(kShardGroup, kValue));
}

void ScenarioSettingsModel::set_settings(const ScenarioSettings& settings) {
  settings_ = settings;
  Q_EMIT dataChanged(index(0, kValue), index(kRows - 1, kValue));
}

}  // namespace ragged::gui
