#include "scenarios/field_ranges.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>

#include "common/input_limits.hpp"
#include "common/units.hpp"
#include "scenarios/text_format.hpp"

namespace ragged::scenarios {
namespace {

namespace pb = google::protobuf;
namespace lim = ragged::limits;

constexpr double kInt32Max = std::numeric_limits<int32_t>::max();
constexpr double kAnyFinite = std::numeric_limits<double>::max();  // no bound but finiteness

// [min, max]
FieldRange closed(std::string_view field, double min, double max, std::string_view why) {
  return {field, min, max, false, false, why};
}
// (0, max]
FieldRange positive(std::string_view field, double max, std::string_view why) {
  return {field, 0, max, true, false, why};
}
// [min, 1)
FieldRange below_one(std::string_view field, std::string_view why) { return {field, 0, 1, false, true, why}; }

const std::vector<FieldRange> kRanges = {
    closed("ModelSource.layers", 0, lim::kMaxLayers, "blocks kept; 0 keeps all"),
    closed("ModelArch.hidden_size", 1, lim::kMaxHidden, "the model width"),
    closed("ModelArch.num_layers", 1, lim::kMaxLayers, "transformer blocks"),
    closed("ModelArch.vocab_size", 1, lim::kMaxVocab, "rows of the token table"),
    closed("ModelArch.intermediate_size", 0, lim::kMaxIntermediate, "the dense MLP width"),
    closed("ModelArch.num_attention_heads", 1, lim::kMaxHeads, "query heads"),
    closed("ModelArch.num_key_value_heads", 0, lim::kMaxHeads, "0: as many as query heads"),
    closed("ModelArch.head_dim", 0, lim::kMaxHeads, "0: hidden_size / num_attention_heads"),
    closed("ModelArch.sliding_window", 0, lim::kMaxPositions, "tokens; 0: full causal attention"),
    closed("ModelArch.q_lora_rank", 0, lim::kMaxLoraRank, "0: q projected directly"),
    closed("ModelArch.kv_lora_rank", 0, lim::kMaxLoraRank, "0: grouped-query attention"),
    closed("ModelArch.qk_nope_head_dim", 0, lim::kMaxHeads, "MLA head dimension"),
    closed("ModelArch.qk_rope_head_dim", 0, lim::kMaxHeads, "MLA head dimension"),
    closed("ModelArch.v_head_dim", 0, lim::kMaxHeads, "MLA head dimension"),
    closed("ModelArch.num_experts", 0, lim::kMaxExperts, "0: a dense model"),
    closed("ModelArch.experts_per_token", 0, lim::kMaxExperts, "routed experts per token"),
    closed("ModelArch.moe_intermediate_size", 0, lim::kMaxIntermediate, "one expert's MLP width"),
    closed("ModelArch.shared_experts", 0, lim::kMaxExperts, "always-active experts"),
    closed("ModelArch.first_dense_layers", 0, lim::kMaxLayers, "leading dense blocks"),
    closed("ModelArch.glu_clamp", 0, 1e6, "the experts' GLU input clamp; 0: none (GPT-OSS: 7)"),
    closed("Cluster.gpus_per_node", 1, lim::kMaxGpusPerNode, "GPUs in one node"),
    closed("Cluster.nodes", 1, lim::kMaxGpus, "nodes in the cluster"),
    closed("Gpu.peak_bf16_tflops", lim::kMinTflops, lim::kMaxTflops, "dense bf16 TFLOP/s"),
    closed("Gpu.peak_fp32_tflops", lim::kMinTflops, lim::kMaxTflops, "fp32 TFLOP/s"),
    closed("Gpu.hbm_capacity_gib", lim::kMinHbmGib, lim::kMaxHbmGib, "GiB per GPU"),
    closed("Allocator.outside_gib", 0, lim::kMaxHbmGib, "GiB per GPU outside PyTorch's allocator"),
    closed("Gpu.hbm_bandwidth_gbytes_per_s", lim::kMinGbytesPerS, lim::kMaxGbytesPerS, "GB/s"),
    closed("Gpu.tdp_watts", 1, lim::kMaxWatts, "watts"),
    closed("Gpu.power_limit_watts", 1, lim::kMaxWatts, "watts"),
    closed("Gpu.clock_spread", 0, 0.3, "relative standard deviation of the SM clock across GPUs"),
    closed("Gpu.locked_clock_mhz", 100, 5000, "MHz, the SM clock nvidia-smi -lgc locks"),
    closed("Link.bandwidth_gbytes_per_s", lim::kMinGbytesPerS, lim::kMaxGbytesPerS, "GB/s per GPU and direction"),
    closed("Link.latency_us", 0, lim::kMaxLatencyUs, "microseconds"),
    closed("Link.full_mesh_gpus", 2, lim::kMaxGpusPerNode, "GPUs of one NVLink full-mesh board"),
    closed("Nics.per_node", 1, lim::kMaxNicsPerNode, "NICs in one node"),
    closed("Nics.bandwidth_gbits_per_s", lim::kMinGbitsPerS, lim::kMaxGbitsPerS, "Gbit/s per NIC and direction"),
    closed("Nics.latency_us", 0, lim::kMaxLatencyUs, "microseconds"),
    closed("Topology.hop_latency_us", 0, lim::kMaxLatencyUs, "microseconds per switch hop"),
    closed("FatTree.levels", 1, 4, "switch levels"),
    closed("FatTree.oversubscription", 1, lim::kMaxOversubscription, "1 is non-blocking"),
    closed("FatTree.switch_radix", 2, lim::kMaxSwitchRadix, "ports per switch"),
    closed("RailOptimized.nodes_per_rail_switch", 1, lim::kMaxGpus, "nodes"),
    closed("RailOptimized.spine_oversubscription", 1, lim::kMaxOversubscription, "1 is non-blocking"),
    closed("Training.shard_group_size", 1, lim::kMaxGpus, "GPUs one model copy is sharded over"),
    closed("Training.replicate_group_size", 1, lim::kMaxGpus, "HSDP replicas"),
    closed("Mesh.dp_replicate", 1, lim::kMaxGpus, "HSDP replicas"),
    closed("Mesh.dp_shard", 1, lim::kMaxGpus, "FSDP ranks per cp rank"),
    closed("Mesh.tp", 1, lim::kMaxGpus, "tensor-parallel ranks"),
    closed("Mesh.cp", 1, lim::kMaxGpus, "context-parallel ranks"),
    closed("Mesh.ep", 1, lim::kMaxExperts, "expert-parallel ranks"),
    closed("Mesh.expert_tp", 1, lim::kMaxGpus, "tensor-parallel ranks of the routed experts"),
    closed("Mesh.pp", 1, lim::kMaxLayers, "pipeline stages"),
    closed("Pipeline.micro_batches", 1, lim::kMaxAccumulation, "micro-batches per step"),
    closed("Pipeline.virtual_stages", 1, lim::kMaxLayers, "model chunks per rank"),
    closed("Pipeline.layers_per_stage", 0, lim::kMaxLayers, "transformer blocks of one stage"),
    closed("Training.micro_batch_size", 1, lim::kMaxMicroBatch, "sequences per GPU per micro-step"),
    closed("Training.sequence_length", 1, lim::kMaxSequence, "tokens per sequence"),
    closed("Training.gradient_accumulation_steps", 1, lim::kMaxAccumulation, "micro-steps per step"),
    closed("Training.prefetch_depth", 0, lim::kMaxPrefetch, "units gathered ahead; 0 disables prefetching"),
    closed("Training.checkpoint_every", 1, lim::kMaxLayers, "blocks per checkpointed block"),
    closed("Experts.busiest_load", 1, lim::kMaxExperts,
           "the busiest expert's tokens over the mean expert's; 1 is balanced"),
    positive("DataParallel.bucket_cap_mb", lim::kMaxHbmGib * 1024, "MiB of gradients a DDP bucket holds"),
    closed("MegatronDataParallel.bucket_size", 1, lim::kMaxParams, "parameters a Megatron DDP gradient bucket holds"),
    closed("ModelOutputs.metric_cross_entropies", 0, lim::kMaxMetricCrossEntropies,
           "full-vocabulary cross-entropies the loop computes per micro-batch"),
    closed("AdamW.lr", 0, kAnyFinite, "the step size"),
    below_one("AdamW.beta1", "a moving-average decay"),
    below_one("AdamW.beta2", "a moving-average decay"),
    positive("AdamW.eps", 1, "added to the denominator"),
    closed("AdamW.weight_decay", 0, kAnyFinite, "decoupled weight decay"),
    closed("Adam8bit.block_rows", 1, lim::kMaxOptimizerBlock, "quantization tile height"),
    closed("Adam8bit.block_cols", 1, lim::kMaxOptimizerBlock, "quantization tile width"),
    closed("Muon.lr", 0, kAnyFinite, "the step size on the matrices"),
    below_one("Muon.momentum", "a moving-average decay"),
    closed("Muon.ns_steps", 1, lim::kMaxNewtonSchulzSteps, "Newton-Schulz iterations"),
    closed("Shampoo.block_size", 1, lim::kMaxOptimizerBlock, "preconditioner block"),
    closed("Shampoo.precondition_frequency", 1, kInt32Max, "steps between root computations"),
    closed("Shampoo.lr", 0, kAnyFinite, "the step size on the matrices"),
    positive("Shampoo.epsilon", 1, "keeps the inverse roots finite"),
    closed("Shampoo.weight_decay", 0, kAnyFinite, "decoupled weight decay"),
    closed("Sgd.lr", 0, kAnyFinite, "the step size"),
    below_one("Sgd.momentum", "a moving-average decay"),
    closed("Sgd.weight_decay", 0, kAnyFinite, "L2 weight decay"),
    closed("GranularitySpec.rows", 0, kInt32Max, "rows per granule"),
    closed("GranularitySpec.block_rows", 0, kInt32Max, "tile height"),
    closed("GranularitySpec.block_cols", 0, kInt32Max, "tile width"),
    closed("Run.steps", 1, lim::kMaxRunSteps, "measured steps"),
    closed("Run.warmup_steps", 0, lim::kMaxRunSteps, "unmeasured steps first"),
    closed("Run.model_scale", 1, lim::kMaxModelScale, "width divisor; 1 runs the model at full width"),
    closed("Run.layers", 1, lim::kMaxLayers, "blocks run"),
    closed("Goodput.interruptions_per_gpu_hour", 0, 1, "per GPU-hour; Llama 3: 1.97e-5"),
    closed("Goodput.storage_gbytes_per_s_per_node", lim::kMinGbytesPerS, lim::kMaxGbytesPerS,
           "GB/s into one node's storage"),
    closed("Goodput.storage_aggregate_tbytes_per_s", lim::kMinGbytesPerS / 1000, lim::kMaxGbytesPerS,
           "TB/s for the whole cluster"),
    closed("Goodput.host_copy_gbytes_per_s", lim::kMinGbytesPerS, lim::kMaxGbytesPerS,
           "GB/s from one GPU to host memory"),
    closed("Goodput.restart_minutes", 0, lim::kMaxRestartMinutes, "minutes; at most a week"),
    closed("Goodput.checkpoint_interval_minutes", 0, lim::kMaxCheckpointIntervalMinutes, "minutes; 0: Daly's optimum"),
    closed("Goodput.train_tokens", 0, lim::kMaxTrainTokens, "tokens; 0: days to train not asked"),
    closed("WhatIf.spine_oversubscription", 1, lim::kMaxOversubscription, "1 is non-blocking"),
    closed("SlowGpus.count", 0, lim::kMaxGpus, "GPUs chosen at random"),
    closed("SlowGpus.ranks", 0, lim::kMaxGpus - 1, "a global rank"),
    closed("SlowGpus.fraction", lim::kMinSlowFraction, 1, "of the compute rate"),
    closed("SlowLinks.count", 0, lim::kMaxGpus, "nodes chosen at random"),
    closed("SlowLinks.nodes", 0, lim::kMaxGpus - 1, "a node index"),
    closed("SlowLinks.fraction", lim::kMinSlowFraction, 1, "of the NICs' bandwidth"),
    closed("ComputeJitter.relative_stddev", 0, 1, "standard deviation of a factor of mean 1"),
};

std::string number_text(double value, bool integral) {
  if ((integral || value == std::floor(value)) && std::fabs(value) < 1e15) return format_integer(static_cast<int64_t>(value));
  return fmt::format("{:g}", value);
}

std::string range_text(const FieldRange& r, bool integral) {
  if (integral) return fmt::format("a whole number from {} to {}", number_text(r.min, true), number_text(r.max, true));
  if (r.max == kAnyFinite) return fmt::format("a finite number >= {}", number_text(r.min, false));
  if (r.max_exclusive) return fmt::format("a number from {} up to (not including) {}", number_text(r.min, false), number_text(r.max, false));
  if (r.min_exclusive && r.min == 0) return fmt::format("a positive number at most {}", number_text(r.max, false));
  if (r.min_exclusive) return fmt::format("a number above {} and at most {}", number_text(r.min, false), number_text(r.max, false));
  return fmt::format("a number from {} to {}", number_text(r.min, false), number_text(r.max, false));
}

bool inside(const FieldRange& r, double value) {
  if (!std::isfinite(value)) return false;
  if (r.min_exclusive ? !(value > r.min) : !(value >= r.min)) return false;
  return r.max_exclusive ? value < r.max : value <= r.max;
}

// "A, B or C": the values of an enum, without its *_UNSPECIFIED.
std::string enum_names(const pb::EnumDescriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.value_count(); ++i) {
    if (!type.value(i)->name().ends_with("_UNSPECIFIED")) names.push_back(type.value(i)->name());
  }
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

std::string value_text(const std::string& text) { return text.size() <= 24 ? text : text.substr(0, 20) + "..."; }

class RangeWalker {
 public:
  std::vector<FieldIssue> take() { return std::move(issues_); }

  void walk(const pb::Message& message, const std::string& prefix) {
    const pb::Descriptor* type = message.GetDescriptor();
    const pb::Reflection* reflection = message.GetReflection();
    for (int i = 0; i < type->field_count(); ++i) {
      const pb::FieldDescriptor* field = type->field(i);
      const std::string path = prefix.empty() ? field->name() : prefix + "." + field->name();
      if (field->is_repeated()) {
        walk_repeated(message, field, path);
        continue;
      }
      if (field->has_presence() && !reflection->HasField(message, field)) continue;
      check_one(message, field, path, -1);
    }
  }

 private:
  void walk_repeated(const pb::Message& message, const pb::FieldDescriptor* field, const std::string& path) {
    const int size = message.GetReflection()->FieldSize(message, field);
    for (int j = 0; j < size; ++j) check_one(message, field, fmt::format("{}[{}]", path, j), j);
  }

  void check_one(const pb::Message& message, const pb::FieldDescriptor* field, const std::string& path, int index) {
    const pb::Reflection* r = message.GetReflection();
    using Cpp = pb::FieldDescriptor::CppType;
    switch (field->cpp_type()) {
      case Cpp::CPPTYPE_MESSAGE:
        walk(index < 0 ? r->GetMessage(message, field) : r->GetRepeatedMessage(message, field, index), path);
        return;
      case Cpp::CPPTYPE_ENUM: {
        const int number = index < 0 ? r->GetEnumValue(message, field) : r->GetRepeatedEnumValue(message, field, index);
        if (field->enum_type()->FindValueByNumber(number) == nullptr) {
          issues_.push_back({path, fmt::format("{} is {}; use {}", field->name(), number, enum_names(*field->enum_type()))});
        }
        return;
      }
      case Cpp::CPPTYPE_INT32: {
        const int32_t v = index < 0 ? r->GetInt32(message, field) : r->GetRepeatedInt32(message, field, index);
        number(message, field, path, v, std::to_string(v), true);
        return;
      }
      case Cpp::CPPTYPE_INT64: {
        const int64_t v = index < 0 ? r->GetInt64(message, field) : r->GetRepeatedInt64(message, field, index);
        number(message, field, path, static_cast<double>(v), std::to_string(v), true);
        return;
      }
      case Cpp::CPPTYPE_UINT32:
      case Cpp::CPPTYPE_UINT64:
        return;  // Run.seed: every 64-bit value is a seed
      case Cpp::CPPTYPE_DOUBLE: {
        const double v = index < 0 ? r->GetDouble(message, field) : r->GetRepeatedDouble(message, field, index);
        number(message, field, path, v, fmt::format("{}", v), false);
        return;
      }
      case Cpp::CPPTYPE_FLOAT: {
        const double v = index < 0 ? r->GetFloat(message, field) : r->GetRepeatedFloat(message, field, index);
        number(message, field, path, v, fmt::format("{}", v), false);
        return;
      }
      case Cpp::CPPTYPE_STRING: {
        // Protobuf's parsers let any byte in: reports print the text, its serializer refuses invalid UTF-8.
        const std::string v = index < 0 ? r->GetString(message, field) : r->GetRepeatedString(message, field, index);
        if (auto problem = text_field_problem(field->name(), v)) issues_.push_back({path, std::move(*problem)});
        return;
      }
      default: return;  // bools
    }
  }

  void number(const pb::Message& message, const pb::FieldDescriptor* field, const std::string& path, double value,
              const std::string& text, bool integral) {
    const std::optional<FieldRange> range = field_range(message.GetDescriptor()->name(), field->name());
    if (!range) {
      issues_.push_back({path, fmt::format("{} has no documented range (a bug in scenarios/field_ranges.cpp)", field->name())});
      return;
    }
    if (inside(*range, value)) return;
    issues_.push_back({path, fmt::format("{} is {}; it must be {} ({})", field->name(), value_text(text),
                                         range_text(*range, integral), range->why)});
  }

  std::vector<FieldIssue> issues_;
};

}  // namespace

const std::vector<FieldRange>& field_ranges() { return kRanges; }

std::optional<FieldRange> field_range(std::string_view message, std::string_view field) {
  for (const FieldRange& range : kRanges) {
    const std::string_view key = range.field;
    if (key.size() == message.size() + 1 + field.size() && key.starts_with(message) && key[message.size()] == '.' &&
        key.ends_with(field)) {
      return range;
    }
  }
  return std::nullopt;
}

std::vector<FieldIssue> check_field_ranges(const google::protobuf::Message& message) {
  RangeWalker walker;
  walker.walk(message, "");
  return walker.take();
}

}  // namespace ragged::scenarios
