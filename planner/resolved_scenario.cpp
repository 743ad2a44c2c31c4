#include "planner/resolved_scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "common/errors.hpp"
#include "models/catalog.hpp"
#include "models/hf_config.hpp"
#include "planner/checkpointing_plan.hpp"
#include "planner/mesh.hpp"
#include "planner/pipeline_stages.hpp"
#include "planner/step_size.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::planner {

models::ArchConfig arch_from_proto(const scenarios::ModelArch& p) {
  models::ArchConfig arch;
  arch.name = p.name().empty() ? "inline" : p.name();
  arch.family = p.family().empty() ? "llama" : p.family();
  // ModelArch spells out Llama-style and MoE blocks; the LayerNorm families'
  // block forms (and their checkpoint names) come from their config.json.
  for (std::string_view family : {"gpt2", "gpt_neox", "mpt", "opt", "falcon", "bloom"}) {
    if (arch.family != family) continue;
    throw FieldError("model.inline_spec.family",
                     fmt::format("model.inline_spec.family '{}': an inline spec describes Llama-style and "
                                 "mixture-of-experts blocks; import a {} model from its config.json (model.hf_config)",
                                 arch.family, arch.family));
  }
  if (!p.dtype().empty()) {
    try {
      arch.dtype = models::parse_dtype(p.dtype());
    } catch (const InputError& e) {
      throw FieldError("model.inline_spec.dtype", e.what());
    }
  }
  arch.hidden = p.hidden_size();
  arch.layers = p.num_layers();
  arch.vocab = p.vocab_size();
  arch.intermediate = p.intermediate_size();
  arch.tie_embeddings = p.tie_word_embeddings();
  arch.heads = p.num_attention_heads();
  arch.kv_heads = p.num_key_value_heads() > 0 ? p.num_key_value_heads() : p.num_attention_heads();
  arch.head_dim = p.head_dim() > 0 ? p.head_dim() : (p.num_attention_heads() > 0 ? p.hidden_size() / p.num_attention_heads() : 0);
  arch.attention_bias = p.attention_bias();
  arch.qkv_bias = p.qkv_bias();
  arch.attention_sinks = p.attention_sinks();
  arch.qk_norm = p.qk_norm();
  arch.sliding_window = p.sliding_window();
  arch.sliding_layers.assign(p.sliding_layers().begin(), p.sliding_layers().end());
  if (p.kv_lora_rank() > 0) {
    arch.attention = models::AttentionKind::kMla;
    arch.q_lora_rank = p.q_lora_rank();
    arch.kv_lora_rank = p.kv_lora_rank();
    arch.qk_nope_head_dim = p.qk_nope_head_dim();
    arch.qk_rope_head_dim = p.qk_rope_head_dim();
    arch.v_head_dim = p.v_head_dim();
  }
  arch.experts = p.num_experts();
  arch.experts_per_token = p.experts_per_token();
  arch.moe_intermediate = p.moe_intermediate_size();
  arch.shared_experts = p.shared_experts();
  arch.first_dense_layers = p.first_dense_layers();
  arch.expert_storage = p.experts_fused() ? models::ExpertStorage::kFused : models::ExpertStorage::kPerExpert;
  arch.expert_bias = p.expert_bias();
  arch.router_bias = p.router_bias();
  arch.glu_clamp = p.glu_clamp();
  models::validate_arch(arch, "model.inline_spec.");
  return arch;
}

namespace {

models::ModelSpec model_from_source(const scenarios::ModelSource& source, const std::filesystem::path& base_dir) {
  switch (source.source_case()) {
    case scenarios::ModelSource::kCatalog:
      try {
        return models::catalog_model(source.catalog());
      } catch (const FieldError&) {
        throw;
      } catch (const InputError& e) {
        throw FieldError("model.catalog", e.what());
      }
    case scenarios::ModelSource::kHfConfig: {
      std::filesystem::path path = source.hf_config();
      if (path.is_relative()) path = base_dir / path;
      try {
        return models::load_hf_config(path);
      } catch (const InputError& e) {
        throw FieldError("model.hf_config", e.what());
      }
    }
    case scenarios::ModelSource::kInlineSpec: return models::build_model(arch_from_proto(source.inline_spec()));
    case scenarios::ModelSource::SOURCE_NOT_SET: break;
  }
  throw FieldError("model", "no model given");
}

// The first `layers` blocks of `model` (model.layers).
models::ModelSpec first_layers(const models::ModelSpec& model, int64_t layers) {
  models::ArchConfig arch = model.arch;
  if (layers < 1 || layers > arch.layers) {
    throw FieldError("model.layers", fmt::format("{} has {} layers; keep between 1 and {} of them (0 keeps all)",
                                                 arch.name, arch.layers, arch.layers));
  }
  if (layers == arch.layers) return model;
  arch.name = fmt::format("{}-{}l", arch.name, layers);
  arch.layers = layers;
  if (!arch.sliding_layers.empty()) arch.sliding_layers.resize(static_cast<size_t>(layers));
  arch.first_dense_layers = std::min(arch.first_dense_layers, layers);
  return models::build_model(arch);
}

// One mesh rank's part of `whole` (training.mesh), every problem located at
// the mesh field that causes it.
models::ModelSpec split_model(const models::ModelSpec& whole, const models::ModelSplit& split) {
  const std::vector<models::SplitProblem> problems = models::check_split(whole.arch, split);
  if (!problems.empty()) throw FieldError("training.mesh." + problems.front().field, problems.front().message);
  return models::build_model(whole.arch, whole.kernels, split);
}

// The granularity against the tensors one rank holds: under tensor
// parallelism their tp-local shapes, which a block must still divide (as
// veScale-FSDP requires of a DTensor's local shard).
void check_granularity(const GranularityPolicy& granularity, const models::ModelSpec& model,
                       const models::ModelSplit& split) {
  if (split.tp == 1) {
    granularity.check(model);
    return;
  }
  try {
    granularity.check(model);
  } catch (const FieldError& e) {
    throw FieldError(e.path(), fmt::format("{} (the tensor's shape on one of the tp {} ranks: set a block that divides "
                                           "it, or a smaller training.mesh.tp)", e.what(), split.tp));
  }
}

}  // namespace

models::ModelSpec resolve_model(const scenarios::ModelSource& source, const std::filesystem::path& base_dir) {
  models::ModelSpec model = model_from_source(source, base_dir);
  return source.layers() == 0 ? model : first_layers(model, source.layers());
}

models::KernelChoices kernel_choices(const scenarios::Training& training) {
  models::KernelChoices kernels;
  const bool loss_compiled = training.compiled() && training.compile_scope() == scenarios::WHOLE_MODEL;
  switch (training.attention()) {
    case scenarios::MATH: kernels.attention = models::AttentionKernel::kMath; break;
    case scenarios::FLASH_ATTENTION_3: kernels.attention = models::AttentionKernel::kFlash3; break;
    case scenarios::TRITON_FLASH_ATTENTION: kernels.attention = models::AttentionKernel::kTritonFlash; break;
    case scenarios::MEMORY_EFFICIENT: kernels.attention = models::AttentionKernel::kMemoryEfficient; break;
    case scenarios::CUDNN_ATTENTION: kernels.attention = models::AttentionKernel::kCudnn; break;
    default: kernels.attention = models::AttentionKernel::kFlash2; break;
  }
  switch (training.loss()) {
    case scenarios::FUSED: kernels.loss = models::LossKernel::kFused; break;
    case scenarios::CHUNKED: kernels.loss = models::LossKernel::kChunked; break;
    case scenarios::SHIFTED_FP32_LOGITS: kernels.loss = models::LossKernel::kShiftedFp32Logits; break;
    case scenarios::LOG_SOFTMAX: kernels.loss = models::LossKernel::kLogSoftmax; break;
    case scenarios::LOSS_PARALLEL:
      // Compiled, Inductor fuses the handlers' element-wise chains (x - max
      // into the exp and its sum; zeros, exp, add and product into one
      // pass), which leaves no more than aten's own cross_entropy keeps:
      // held as FP32_LOGITS under vocabulary parallelism is (below).
      kernels.loss = loss_compiled ? models::LossKernel::kFp32Logits : models::LossKernel::kLossParallel;
      break;
    default: kernels.loss = models::LossKernel::kFp32Logits; break;
  }
  kernels.dense_attention_mask = training.attention_mask() == scenarios::DENSE;
  kernels.norm = training.norm() == scenarios::FUSED_NORM ? models::NormKernel::kFused : models::NormKernel::kEager;
  kernels.eager_blocks = !training.compiled();
  kernels.repeated_kv = training.kv_heads() == scenarios::REPEATED_KV;
  kernels.fused_projections = training.projections() == scenarios::FUSED_PROJECTIONS;
  kernels.expert_load = training.experts().busiest_load();
  switch (training.experts().kernel()) {
    case scenarios::PADDED:
      kernels.expert_kernel = models::ExpertKernel::kPadded;
      break;
    case scenarios::MULTI_STREAM:
      kernels.expert_kernel = models::ExpertKernel::kMultiStream;
      break;
    default:
      kernels.expert_kernel = models::ExpertKernel::kGrouped;
      break;
  }
  kernels.expert_epilogue = training.experts().epilogue() == scenarios::EAGER_EPILOGUE ? models::ExpertEpilogue::kEager
                                                                                       : models::ExpertEpilogue::kFused;
  kernels.saved_names = saved_names(training);
  // A vocabulary-parallel loss runs through DTensor's loss_parallel handlers
  // (torch/distributed/tensor/parallel/loss.py, _log_softmax: the fp32
  // log-softmax of the local shard materialised between its two
  // all-reduces); that Inductor fuses it is not established, so it is held
  // as written.
  kernels.compiled_loss = loss_compiled && !scenarios::vocabulary_sharded_logits(training.mesh());
  return kernels;
}

namespace {

// What the pipeline's simulation does not model yet, refused by field.
void check_pipeline_supported(const scenarios::Scenario& scenario, const models::ModelSpec& model) {
  const scenarios::Training& training = scenario.training();
  const int pp = training.mesh().pp();
  if (model.arch.tie_embeddings) {
    throw FieldError("training.mesh.pp",
                     fmt::format("pp {}: model {} ties its embeddings, which puts the table on the first and the last "
                                 "stage; Megatron's DDP keeps a copy on the last stage and sums the two gradients "
                                 "(strategy MEGATRON_DDP), PyTorch's pipelining shares no parameter between stages: "
                                 "use MEGATRON_DDP, set pp to 1, or use a model with an untied head",
                                 pp, model.name));
  }
  if (scenario.has_whatif()) {
    throw FieldError("whatif", fmt::format("training.mesh.pp is {}: what-ifs simulate one pipeline stage's ranks; "
                                           "remove the whatif block or set pp to 1", pp));
  }
  const scenarios::Pipeline& p = training.pipeline();
  plan_pipeline_stages(model, pp, std::max(1, p.virtual_stages()),
                       {p.layers_per_stage().begin(), p.layers_per_stage().end()}, training.sequence_length());
}

// training.experts against the model: only a mixture of experts has a
// router, and no router puts more than every token on one expert.
void check_experts(const scenarios::LoadedScenario& loaded, const models::ModelSpec& model) {
  const scenarios::Experts& written = loaded.written.training().experts();
  if (!model.arch.is_moe()) {
    if (written.has_busiest_load() || written.kernel() != scenarios::EXPERT_KERNEL_UNSPECIFIED ||
        written.reduce() != scenarios::DTYPE_UNSPECIFIED ||
        written.epilogue() != scenarios::EXPERT_EPILOGUE_UNSPECIFIED ||
        written.checkpointing() != scenarios::CHECKPOINTING_UNSPECIFIED) {
      throw FieldError("training.experts", fmt::format("model {} has no routed experts, so there is no router to "
                                                       "balance: remove the experts block", model.name));
    }
    return;
  }
  if (written.checkpointing() != scenarios::CHECKPOINTING_UNSPECIFIED && loaded.scenario.training().mesh().ep() <= 1) {
    throw FieldError("training.experts.checkpointing",
                     fmt::format("the routed experts of model {} are a unit of their own only under expert "
                                 "parallelism: set mesh.ep (a divisor of its {} experts), or remove "
                                 "experts.checkpointing and checkpoint the whole block with activation_checkpointing",
                                 model.name, model.arch.experts));
  }
  const double load = loaded.scenario.training().experts().busiest_load();
  const double ceiling = models::max_expert_load(model.arch);
  if (load > ceiling + 1e-9) {
    throw FieldError("training.experts.busiest_load",
                     fmt::format("busiest_load {:g} is more than a router can give model {}: {} experts, {} a token, "
                                 "so every token on the same experts is a load of {:g}; give 1 (balanced) to {:g}",
                                 load, model.name, model.arch.experts, model.arch.experts_per_token, ceiling, ceiling));
  }
}

}  // namespace

ResolvedScenario resolve_scenario(scenarios::LoadedScenario loaded) {
  try {
    models::ModelSpec model = resolve_model(loaded.scenario.model(), loaded.base_dir);
    check_experts(loaded, model);
    // The training stack's kernels change what units keep and compute.
    const models::KernelChoices kernels = kernel_choices(loaded.scenario.training());
    if (!(kernels == model.kernels)) model = models::build_model(model.arch, kernels);
    std::optional<models::ModelSpec> whole;
    const Mesh mesh = mesh_of(loaded.scenario.training());
    if (mesh.pp > 1 && model.arch.tie_embeddings && loaded.scenario.training().strategy() == scenarios::MEGATRON_DDP) {
      // The last stage's head gets its own copy of the table.
      models::ArchConfig arch = model.arch;
      arch.tie_embeddings = false;
      arch.table_copied_across_stages = true;
      model = models::build_model(arch, model.kernels);
    }
    if (mesh.pp > 1) check_pipeline_supported(loaded.scenario, model);
    const models::ModelSplit split = mesh.model_split();
    if (!split.trivial()) {
      whole = std::move(model);
      model = split_model(*whole, split);
    }
    GranularityPolicy granularity = GranularityPolicy::from_proto(loaded.scenario.training().granularity());
    check_granularity(granularity, model, split);
    check_step_size(loaded.scenario, model);
    return ResolvedScenario{std::move(loaded), std::move(model), std::move(granularity), std::move(whole)};
  } catch (const FieldError& e) {
    scenarios::throw_field_error(loaded, e.path(), e.what());
  }
}

}  // namespace ragged::planner
