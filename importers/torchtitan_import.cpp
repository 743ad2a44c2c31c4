// A torchtitan job config (TOML, torchtitan/models/*/train_configs/*.toml
// up to torchtitan's move to Python configs in February 2026) as a scenario.
// torchtitan trains with FSDP2 on a device mesh pp x dp_replicate x dp_shard
// x cp x tp (ep carved out of dp_shard x cp), as Ragged's training.mesh does.

#include <algorithm>

#include <fmt/format.h>

#include "common/input_limits.hpp"
#include "common/utf8.hpp"
#include "importers/format_importers.hpp"
#include "importers/scenario_draft.hpp"

namespace ragged::importers {
namespace {

// torchtitan's model name and flavor -> the catalog model with its architecture.
std::string catalog_model(const std::string& name, const std::string& flavor) {
  struct Known {
    const char* name;
    const char* flavor;
    const char* catalog;
  };
  static constexpr Known kKnown[] = {
      {"llama3", "8B", "llama3-8b"},
      {"llama3", "70B", "llama3-70b"},
      {"llama3", "405B", "llama3.1-405b"},
      {"deepseek_v3", "671B", "deepseek-v3"},
  };
  for (const Known& k : kKnown) {
    if (name == k.name && flavor == k.flavor) return k.catalog;
  }
  return "";
}

std::string torchtitan_why_ignored(std::string_view path) {
  if (path.starts_with("job.") || path.starts_with("profiling.") || path.starts_with("metrics.") ||
      path.starts_with("validation.")) {
    return "logging, profiling and evaluation, outside the training step";
  }
  if (path.starts_with("checkpoint.")) {
    return "checkpoint saving, outside the step (`ragged simulate --goodput` costs checkpoints from the scenario's "
           "goodput block)";
  }
  if (path.starts_with("lr_scheduler.") || path.starts_with("optimizer.")) {
    return "optimizer settings with no bearing on a step's time or memory";
  }
  for (std::string_view run : {"training.steps", "training.dataset", "training.dataset_path", "training.max_norm",
                               "training.seed", "training.deterministic", "training.gc_freq", "training.warmup_steps",
                               "training.gc_debug", "training.skip_nan_inf", "training.max_norm_type"}) {
    if (path == run) return "the run's length, data and numerics, no bearing on one step";
  }
  if (path == "model.hf_assets_path" || path == "model.tokenizer_path")
    return "model files (tokenizer, weights), not the architecture";
  if (path.starts_with("quantize.") || path.starts_with("float8.") || path.starts_with("mx.")) {
    return "quantization settings left unused: model.converters enables no quantization";
  }
  if (path.starts_with("comm.") || path.starts_with("fault_tolerance.") || path.starts_with("memory_estimation.")) {
    return "process-group timeouts, fault tolerance and estimation tools, outside the step";
  }
  if (path.starts_with("activation_checkpoint.")) return "settings of another activation_checkpoint.mode";
  if (path.starts_with("parallelism.pipeline") || path.starts_with("experimental.pipeline") ||
      path.starts_with("parallelism.context_parallel") || path.starts_with("experimental.context_parallel")) {
    return "settings of a parallelism this config does not use";
  }
  return "not read by the importer (unknown to it)";
}

}  // namespace

ImportedConfig import_torchtitan(const ConfigDocument& doc, const ImportOptions& options, const std::string& name) {
  ScenarioDraft draft(doc, options, name);
  scenarios::Scenario& s = draft.scenario();
  scenarios::Training& t = draft.training();
  if (auto description = doc.string("job.description")) {
    // A scenario's text holds no control characters (reports print it): they become spaces.
    s.set_description(steering_as_spaces(*description));
    draft.mapped("description", fmt::format("\"{}\"", *description), {"job.description"});
  }

  // The model: name and flavor, as the catalog has them.
  const std::string model_name = doc.string("model.name").value_or("");
  const std::string flavor = doc.string("model.flavor").value_or("");
  draft.set_model(catalog_model(model_name, flavor), {"model.name", "model.flavor"}, "model.flavor",
                  flavor.empty()
                      ? std::string("the config names no model (model.name and model.flavor)")
                      : fmt::format("torchtitan's {} flavor \"{}\" is not in Ragged's catalog (its llama3 8B, "
                                    "70B and 405B and deepseek_v3 671B are)",
                                    model_name, flavor));

  // The mesh. torchtitan before 2025 kept the degrees under [training]
  // (context and pipeline under [experimental]); [parallelism] since.
  auto key = [&doc](const char* field) {
    for (const char* section : {"parallelism.", "training.", "experimental."}) {
      const std::string path = std::string(section) + field;
      if (doc.has(path)) return path;
    }
    return std::string("parallelism.") + field;
  };
  // The 2024 layout: no [parallelism] table (its defaults differ: the optimizer).
  const bool old_layout = !doc.has_section("parallelism") && doc.has("training.batch_size");
  const std::string replicate_path = key("data_parallel_replicate_degree");
  const std::string shard_path = key("data_parallel_shard_degree");
  const std::string tp_path = key("tensor_parallel_degree");
  const std::string cp_path = key("context_parallel_degree");
  const std::string pp_path = key("pipeline_parallel_degree");
  const std::string ep_path = key("expert_parallel_degree");
  const int64_t replicate = doc.integer(replicate_path, 1, limits::kMaxGpus).value_or(1);
  const int64_t shard = doc.integer(shard_path, -1, limits::kMaxGpus).value_or(-1);
  if (shard == 0) doc.fail(shard_path, "0 shards nothing; give -1 (every GPU left) or N >= 1");
  const int64_t tp = doc.integer(tp_path, 1, limits::kMaxGpus).value_or(1);
  const int64_t cp = doc.integer(cp_path, 1, limits::kMaxGpus).value_or(1);
  const int64_t pp = doc.integer(pp_path, 1, limits::kMaxGpus).value_or(1);
  const int64_t ep = doc.integer(ep_path, 1, limits::kMaxGpus).value_or(1);
  // Each degree is at most 2^20, and so must their product be (a GPU count):
  // checked one factor at a time, so that no product overflows.
  int64_t product = 1;
  for (const auto& [path, degree] :
       {std::pair{&replicate_path, replicate}, std::pair{&tp_path, tp}, std::pair{&cp_path, cp},
        std::pair{&pp_path, pp}, std::pair{&shard_path, std::max<int64_t>(shard, 1)}}) {
    product *= degree;
    if (product > limits::kMaxGpus) {
      doc.fail(*path, fmt::format("the degrees multiply to more than {} GPUs; give smaller degrees", limits::kMaxGpus));
    }
  }
  const int64_t others = replicate * tp * cp * pp;
  const std::vector<std::string> degrees = {replicate_path, shard_path, tp_path, cp_path, pp_path};
  if (shard > 0 && options.gpus > 0 && shard * others != options.gpus) {
    doc.fail(shard_path,
             fmt::format("{} with the other degrees makes {} GPUs, but --gpus is {}; give --gpus {}, or set it to -1 "
                         "(every GPU the other degrees leave)",
                         shard, shard * others, options.gpus, shard * others));
  }
  const int64_t gpus =
      draft.set_cluster(shard > 0 ? shard * others : 0, degrees, shard_path,
                        "-1 (every GPU the other degrees leave), so the config does not fix the GPU count");
  if (gpus % others != 0) {
    doc.fail(tp_path,
             fmt::format("replicate {} x tp {} x cp {} x pp {} = {} does not divide the {} GPUs; give --gpus a "
                         "multiple of {}",
                         replicate, tp, cp, pp, others, gpus, others));
  }
  const int64_t dp_shard = gpus / others;
  t.set_strategy(scenarios::FSDP2);
  draft.assumed("training.strategy", "FSDP2", "torchtitan shards with FSDP2 (fully_shard)");
  scenarios::Mesh* mesh = t.mutable_mesh();
  auto set_degree = [&](const char* field, int64_t value, const std::string& path,
                        void (scenarios::Mesh::*set)(int32_t)) {
    if (!doc.has(path)) return;
    if (value > 1) (mesh->*set)(static_cast<int32_t>(value));
    draft.mapped(fmt::format("training.mesh.{}", field), fmt::format("{}", value), {path});
  };
  set_degree("dp_replicate", replicate, replicate_path, &scenarios::Mesh::set_dp_replicate);
  if (shard > 0) mesh->set_dp_shard(static_cast<int32_t>(shard));
  draft.mapped("training.mesh.dp_shard", fmt::format("{}", dp_shard), {shard_path});
  set_degree("tp", tp, tp_path, &scenarios::Mesh::set_tp);
  set_degree("cp", cp, cp_path, &scenarios::Mesh::set_cp);
  set_degree("pp", pp, pp_path, &scenarios::Mesh::set_pp);
  set_degree("ep", ep, ep_path, &scenarios::Mesh::set_ep);
  if (auto etp = doc.integer("parallelism.expert_tensor_parallel_degree", 1, limits::kMaxGpus)) {
    if (*etp == 1)
      draft.agrees("parallelism.expert_tensor_parallel_degree", "experts not split by tp, as Ragged has them");
    else
      draft.not_modelled("parallelism.expert_tensor_parallel_degree",
                         "tp inside experts is not modelled (experts are cut by ep only)", true);
  }
  if (auto async = doc.boolean("parallelism.enable_async_tensor_parallel")) {
    if (!*async || tp == 1) {
      draft.agrees("parallelism.enable_async_tensor_parallel", "tp's collectives run as their own ops");
    } else {
      mesh->set_tp_overlap(scenarios::ASYNC_TP);
      draft.mapped("training.mesh.tp_overlap", "ASYNC_TP", {"parallelism.enable_async_tensor_parallel"});
    }
  }
  if (auto reshard = doc.string("parallelism.fsdp_reshard_after_forward")) {
    const bool value = *reshard == "always" || (*reshard == "default" && pp == 1);
    if (*reshard != "always" && *reshard != "never" && *reshard != "default") {
      doc.fail("parallelism.fsdp_reshard_after_forward",
               fmt::format("\"{}\": give \"default\", \"always\" or \"never\"", *reshard));
    }
    t.set_reshard_after_forward(value);
    draft.mapped("training.reshard_after_forward", value ? "true" : "false",
                 {"parallelism.fsdp_reshard_after_forward"});
  }

  // The batch: local_batch_size sequences per data-parallel rank (split into
  // pipeline micro-batches under pp), global_batch_size by accumulation.
  const char* local_path = doc.has("training.local_batch_size") ? "training.local_batch_size" : "training.batch_size";
  int64_t local = doc.integer(local_path, 1, limits::kMaxMicroBatch).value_or(0);
  if (local == 0) {
    if (options.micro_batch == 0) doc.fail("training.local_batch_size", "not in the config; give --micro-batch N");
    local = options.micro_batch;
    draft.from_command_line("training.micro_batch_size", fmt::format("{}", local), "--micro-batch");
  }
  if (pp > 1) {
    const int64_t pipeline_micro =
        doc.integer("parallelism.pipeline_parallel_microbatch_size", 1, limits::kMaxMicroBatch).value_or(1);
    if (local % pipeline_micro != 0) {
      doc.fail("parallelism.pipeline_parallel_microbatch_size",
               fmt::format("{} does not divide {} = {}; give a divisor", pipeline_micro, local_path, local));
    }
    t.set_micro_batch_size(static_cast<int32_t>(pipeline_micro));
    t.mutable_pipeline()->set_micro_batches(static_cast<int32_t>(local / pipeline_micro));
    draft.mapped("training.micro_batch_size", fmt::format("{}", pipeline_micro),
                 {"parallelism.pipeline_parallel_microbatch_size"});
    draft.mapped("training.pipeline.micro_batches", fmt::format("{}", local / pipeline_micro),
                 {local_path, "parallelism.pipeline_parallel_microbatch_size"});
    const std::string schedule_path = key("pipeline_parallel_schedule");
    if (auto schedule = doc.string(schedule_path)) {
      scenarios::PipelineSchedule value = scenarios::PIPELINE_SCHEDULE_UNSPECIFIED;
      if (*schedule == "1F1B")
        value = scenarios::ONE_F_ONE_B;
      else if (*schedule == "GPipe")
        value = scenarios::GPIPE;
      else if (*schedule == "Interleaved1F1B")
        value = scenarios::INTERLEAVED_1F1B;
      if (value == scenarios::PIPELINE_SCHEDULE_UNSPECIFIED) {
        draft.not_modelled(schedule_path, "Ragged models GPipe, 1F1B, Interleaved1F1B and ZB-H1; 1F1B used", true);
      } else {
        t.mutable_pipeline()->set_schedule(value);
        draft.mapped("training.pipeline.schedule", scenarios::PipelineSchedule_Name(value), {schedule_path});
      }
    }
    for (const ConfigLeaf& leaf : doc.leaves()) {
      if ((leaf.path.starts_with("parallelism.pipeline_parallel") ||
           leaf.path.starts_with("experimental.pipeline_parallel")) &&
          !doc.was_read(leaf)) {
        draft.not_modelled(leaf.path, "stage splits and micro-batch counts are Ragged's own (balanced compute)");
      }
    }
  } else if (doc.has(local_path)) {
    t.set_micro_batch_size(static_cast<int32_t>(local));
    draft.mapped("training.micro_batch_size", fmt::format("{}", local), {local_path});
  } else {
    t.set_micro_batch_size(static_cast<int32_t>(local));
  }
  if (auto global = doc.integer("training.global_batch_size", -1, int64_t{1} << 40); global && *global > 0) {
    const int64_t per_step = local * replicate * dp_shard;
    if (*global % per_step != 0) {
      doc.fail(
          "training.global_batch_size",
          fmt::format("{} is not a multiple of local_batch_size {} x {} data-parallel ranks = {}; give a multiple, "
                      "or -1",
                      *global, local, replicate * dp_shard, per_step));
    }
    if (*global / per_step > limits::kMaxAccumulation) {
      doc.fail("training.global_batch_size", fmt::format("{} makes {} accumulation steps; at most {}: give a smaller "
                                                         "global batch or more GPUs",
                                                         *global, *global / per_step, limits::kMaxAccumulation));
    }
    t.set_gradient_accumulation_steps(static_cast<int32_t>(*global / per_step));
    draft.mapped("training.gradient_accumulation_steps", fmt::format("{}", *global / per_step),
                 {"training.global_batch_size", local_path});
  }
  if (auto seq = doc.integer("training.seq_len", 1, limits::kMaxSequence)) {
    t.set_sequence_length(static_cast<int32_t>(*seq));
    draft.mapped("training.sequence_length", fmt::format("{}", *seq), {"training.seq_len"});
  } else if (options.sequence_length > 0) {
    t.set_sequence_length(static_cast<int32_t>(options.sequence_length));
    draft.from_command_line("training.sequence_length", fmt::format("{}", options.sequence_length), "--seq-len");
  } else {
    doc.fail("training.seq_len", "not in the config; give --seq-len N");
  }

  map_torchtitan_kernels(doc, draft, old_layout);
  return draft.finish(ConfigFormat::kTorchtitan, torchtitan_why_ignored);
}

}  // namespace ragged::importers
