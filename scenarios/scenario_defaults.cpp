#include <algorithm>

#include "common/checked_math.hpp"
#include "common/input_limits.hpp"
#include "common/units.hpp"
#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {
namespace {

void default_cluster(Cluster* cluster) {
  Gpu* gpu = cluster->mutable_gpu();
  if (const GpuPreset* preset = gpu_preset_or_null(gpu->preset())) {
    if (!gpu->has_peak_bf16_tflops()) gpu->set_peak_bf16_tflops(preset->peak_bf16_tflops);
    if (!gpu->has_peak_fp32_tflops()) gpu->set_peak_fp32_tflops(preset->peak_fp32_tflops);
    if (!gpu->has_hbm_capacity_gib()) gpu->set_hbm_capacity_gib(preset->hbm_capacity_gib);
    if (!gpu->has_hbm_bandwidth_gbytes_per_s()) gpu->set_hbm_bandwidth_gbytes_per_s(preset->hbm_bandwidth_gbytes_per_s);
    if (!gpu->has_tdp_watts() && preset->tdp_watts > 0) gpu->set_tdp_watts(preset->tdp_watts);
    if (!gpu->has_power_limit_watts() && preset->power_limit_watts > 0) gpu->set_power_limit_watts(preset->power_limit_watts);
    if (!gpu->has_clock_spread()) gpu->set_clock_spread(preset->clock_spread);
    Link* link = cluster->mutable_intra_node();
    if (!link->has_bandwidth_gbytes_per_s()) link->set_bandwidth_gbytes_per_s(preset->intra_node_gbytes_per_s);
    if (!link->has_latency_us()) link->set_latency_us(preset->intra_node_latency_us);
    if (!link->has_full_mesh_gpus() && preset->full_mesh_gpus > 0 && cluster->gpus_per_node() > 1 &&
        cluster->gpus_per_node() <= preset->full_mesh_gpus) {
      link->set_full_mesh_gpus(preset->full_mesh_gpus);
    }
  }
  if (!gpu->has_power_limit_watts() && gpu->has_tdp_watts()) gpu->set_power_limit_watts(gpu->tdp_watts());
  if (!gpu->has_clock_spread()) gpu->set_clock_spread(kDefaultClockSpread);  // a GPU given by its numbers
  if (!gpu->has_peak_fp32_tflops() && gpu->has_peak_bf16_tflops()) {
    gpu->set_peak_fp32_tflops(gpu->peak_bf16_tflops() / 14.8);  // Hopper's bf16:fp32 ratio
  }
  Nics* nics = cluster->mutable_nics();
  if (!nics->has_per_node()) {
    nics->set_per_node(static_cast<int32_t>(std::clamp<int64_t>(cluster->gpus_per_node(), 1, limits::kMaxNicsPerNode)));
  }
  if (!nics->has_bandwidth_gbits_per_s()) nics->set_bandwidth_gbits_per_s(400);
  if (!nics->has_latency_us()) nics->set_latency_us(2.0);

  Topology* topology = cluster->mutable_topology();
  if (!topology->has_hop_latency_us()) topology->set_hop_latency_us(0.5);
  if (topology->kind_case() == Topology::KIND_NOT_SET) topology->mutable_fat_tree();
  if (topology->has_fat_tree()) {
    FatTree* tree = topology->mutable_fat_tree();
    if (!tree->has_levels()) tree->set_levels(cluster->nodes() > 4096 ? 3 : 2);
    if (!tree->has_oversubscription()) tree->set_oversubscription(1.0);
    if (!tree->has_switch_radix()) tree->set_switch_radix(64);
  } else {
    RailOptimized* rail = topology->mutable_rail_optimized();
    if (!rail->has_nodes_per_rail_switch()) rail->set_nodes_per_rail_switch(32);
    if (!rail->has_spine_oversubscription()) rail->set_spine_oversubscription(1.0);
  }
}

void default_adamw(AdamW* adam) {
  if (!adam->has_lr()) adam->set_lr(3e-4);
  if (!adam->has_beta1()) adam->set_beta1(0.9);
  if (!adam->has_beta2()) adam->set_beta2(0.95);
  if (!adam->has_eps()) adam->set_eps(1e-8);
  if (!adam->has_weight_decay()) adam->set_weight_decay(0.1);
}

void default_optimizer(Optimizer* optimizer) {
  switch (optimizer->kind_case()) {
    case Optimizer::KIND_NOT_SET:
    case Optimizer::kAdamw: default_adamw(optimizer->mutable_adamw()); break;
    case Optimizer::kAdam8Bit: {
      Adam8bit* adam = optimizer->mutable_adam8bit();
      default_adamw(adam->mutable_adam());
      if (!adam->has_block_rows()) adam->set_block_rows(32);
      if (!adam->has_block_cols()) adam->set_block_cols(32);
      break;
    }
    case Optimizer::kMuon: {
      Muon* muon = optimizer->mutable_muon();
      if (!muon->has_lr()) muon->set_lr(0.02);
      if (!muon->has_momentum()) muon->set_momentum(0.95);
      if (!muon->has_ns_steps()) muon->set_ns_steps(5);
      default_adamw(muon->mutable_adamw());
      break;
    }
    case Optimizer::kShampoo: {
      Shampoo* shampoo = optimizer->mutable_shampoo();
      if (!shampoo->has_block_size()) shampoo->set_block_size(1024);
      // DistributedShampoo's defaults (Shi et al. 2023, arXiv 2309.06497;
      // facebookresearch/optimizers): roots every step, lr 1e-2, epsilon 1e-12
      // on the factors' eigenvalues, no weight decay. Roots every step is also
      // Algorithm 1 of Gupta et al. 2018; reusing step 1's roots (from one
      // gradient) for 100 steps diverged by step 5 on tiny-llama-4xcpu.
      if (!shampoo->has_precondition_frequency()) shampoo->set_precondition_frequency(1);
      if (!shampoo->has_lr()) shampoo->set_lr(1e-2);
      if (!shampoo->has_epsilon()) shampoo->set_epsilon(1e-12);
      if (!shampoo->has_weight_decay()) shampoo->set_weight_decay(0.0);
      default_adamw(shampoo->mutable_adamw());
      break;
    }
    case Optimizer::kSgd: {
      Sgd* sgd = optimizer->mutable_sgd();
      if (!sgd->has_lr()) sgd->set_lr(1e-3);
      if (!sgd->has_momentum()) sgd->set_momentum(0.0);
      if (!sgd->has_weight_decay()) sgd->set_weight_decay(0.0);
      break;
    }
  }
}

// Block-wise 8-bit Adam needs its tiles whole on one rank: unless the user
// chose a granularity, it becomes the optimizer's block.
void default_granularity(Training* training) {
  GranularitySpec* spec = training->mutable_granularity()->mutable_default_spec();
  if (spec->kind() != GRANULARITY_UNSPECIFIED) return;
  if (training->optimizer().has_adam8bit()) {
    spec->set_kind(BLOCK);
    spec->set_block_rows(training->optimizer().adam8bit().block_rows());
    spec->set_block_cols(training->optimizer().adam8bit().block_cols());
  } else {
    spec->set_kind(ELEMENT);
  }
}

// Memory a training process holds outside PyTorch's caching allocator, as
// measured with PyTorch on the GPU: the CUDA context with lazy module loading
// ("around 400MB", pytorch/pytorch issue #109888) and one NCCL communicator per
// process group a rank runs collectives in, 688 MiB for a group of more than two
// GPUs and 544 MiB for two (4 x A100 with NVLink, NVIDIA/nccl issue #964).
constexpr double kCudaContextMiB = 400;
constexpr double kNcclCommunicatorMiB = 688;
constexpr double kNcclPairCommunicatorMiB = 544;

double communicator_mib(int64_t ranks) {
  if (ranks <= 1) return 0;
  return ranks == 2 ? kNcclPairCommunicatorMiB : kNcclCommunicatorMiB;
}

// A rank joins one communicator per mesh group it runs collectives in: the
// shard group, the replicas, and with a mesh its tp, cp and ep groups and,
// under ep, the experts' shard group (dp_shard x cp / ep; with whole experts
// under tp, expert_tp 1, tp x dp_shard x cp / ep).
double default_outside_allocator_gib(const Training& training) {
  const Mesh& mesh = training.mesh();
  double mib = kCudaContextMiB + communicator_mib(training.shard_group_size()) +
               communicator_mib(training.replicate_group_size()) + communicator_mib(mesh.tp()) +
               communicator_mib(mesh.cp()) + communicator_mib(mesh.ep());
  const int64_t expert_tp_ranks = mesh.tp() / std::max(1, mesh.expert_tp());
  if (mesh.ep() > 1) mib += communicator_mib(training.shard_group_size() * expert_tp_ranks / mesh.ep());
  if (mesh.pp() > 1) mib += 2 * communicator_mib(2);  // a pair with each neighbouring stage
  return mib / 1024;
}

// The mesh and the FSDP groups it implies (scenario.proto, Mesh): the
// written ones first, the shard group over what tp and the replicas leave.
// Values out of range are refused later (field_ranges.cpp); here they only
// must not divide by zero.
void default_mesh(Training* training, int64_t gpus) {
  Mesh* mesh = training->mutable_mesh();
  if (!mesh->has_tp()) mesh->set_tp(1);
  if (!mesh->has_cp()) mesh->set_cp(1);
  if (!mesh->has_ep()) mesh->set_ep(1);
  if (!mesh->has_sequence_parallel()) mesh->set_sequence_parallel(true);
  if (!mesh->has_pp()) mesh->set_pp(1);
  if (!mesh->has_expert_tp()) mesh->set_expert_tp(mesh->tp());
  if (mesh->expert_dispatcher() == EXPERT_DISPATCHER_UNSPECIFIED) mesh->set_expert_dispatcher(ALL_TO_ALL);
  if (mesh->expert_routing() == EXPERT_ROUTING_UNSPECIFIED) mesh->set_expert_routing(UNIFORM);
  if (mesh->sequence_layout() == SEQUENCE_LAYOUT_UNSPECIFIED) mesh->set_sequence_layout(SEQUENCE_FIRST);
  if (mesh->column_input() == COLUMN_INPUT_UNSPECIFIED) mesh->set_column_input(PER_MODULE);
  if (mesh->tp_overlap() == TP_OVERLAP_UNSPECIFIED) mesh->set_tp_overlap(TP_OVERLAP_NONE);
  // The ranks one pipeline stage's tp rank leaves to data parallelism.
  const int64_t tp = int64_t{std::max(1, mesh->tp())} * std::max(1, mesh->pp());
  const int64_t cp = std::max(1, mesh->cp());
  if (!training->has_replicate_group_size() && mesh->has_dp_replicate()) {
    training->set_replicate_group_size(mesh->dp_replicate());
  }
  if (!training->has_shard_group_size() && mesh->has_dp_shard()) {
    training->set_shard_group_size(static_cast<int32_t>(std::min<int64_t>(limits::kMaxGpus, mesh->dp_shard() * cp)));
  }
  if (!training->has_shard_group_size()) {
    const int64_t replicas = training->has_replicate_group_size() ? std::max(1, training->replicate_group_size()) : 1;
    training->set_shard_group_size(static_cast<int32_t>(std::max<int64_t>(1, gpus / (replicas * tp))));
  }
  if (!training->has_replicate_group_size() && training->shard_group_size() > 0) {
    training->set_replicate_group_size(static_cast<int32_t>(std::max<int64_t>(1, gpus / (training->shard_group_size() * tp))));
  }
  if (!mesh->has_dp_shard()) mesh->set_dp_shard(static_cast<int32_t>(std::max<int64_t>(1, training->shard_group_size() / cp)));
  if (!mesh->has_dp_replicate()) mesh->set_dp_replicate(training->replicate_group_size());
}

void default_training(Training* training, int64_t cluster_gpus, const Gpu& gpu) {
  // A cluster outside its range is refused on its own fields: the groups
  // derived from it are then left valid, so that one mistake is one problem.
  const int64_t gpus = cluster_gpus >= 1 && cluster_gpus <= limits::kMaxGpus ? cluster_gpus : 1;
  if (training->strategy() == STRATEGY_UNSPECIFIED) training->set_strategy(RAGGED);
  // DDP shards nothing: every GPU is a replica.
  if (training->strategy() == DDP && !training->has_shard_group_size()) training->set_shard_group_size(1);
  default_mesh(training, gpus);
  if (!training->has_micro_batch_size()) training->set_micro_batch_size(1);
  if (!training->has_sequence_length()) training->set_sequence_length(4096);
  Pipeline* pipeline = training->mutable_pipeline();
  if (!training->has_gradient_accumulation_steps() && pipeline->has_micro_batches()) {
    training->set_gradient_accumulation_steps(pipeline->micro_batches());
  }
  if (!training->has_gradient_accumulation_steps()) training->set_gradient_accumulation_steps(1);
  if (training->mesh().pp() > 1) {
    if (pipeline->schedule() == PIPELINE_SCHEDULE_UNSPECIFIED) pipeline->set_schedule(ONE_F_ONE_B);
    if (!pipeline->has_micro_batches()) pipeline->set_micro_batches(training->gradient_accumulation_steps());
    if (!pipeline->has_virtual_stages()) pipeline->set_virtual_stages(pipeline->schedule() == INTERLEAVED_1F1B ? 2 : 1);
  } else if (pipeline->ByteSizeLong() == 0) {
    training->clear_pipeline();
  }
  Precision* precision = training->mutable_precision();
  if (precision->param() == DTYPE_UNSPECIFIED) precision->set_param(BF16);
  if (precision->master() == DTYPE_UNSPECIFIED) precision->set_master(FP32);
  // DDP reduces the gradients in the parameters' own dtype.
  if (precision->reduce() == DTYPE_UNSPECIFIED) {
    precision->set_reduce(training->strategy() == DDP ? precision->master() : FP32);
  }
  if (training->activation_checkpointing() == CHECKPOINTING_UNSPECIFIED) training->set_activation_checkpointing(NONE);
  if (!training->has_checkpoint_every()) training->set_checkpoint_every(1);
  default_optimizer(training->mutable_optimizer());
  default_granularity(training);
  if (!training->has_prefetch_depth()) training->set_prefetch_depth(1);
  // With pipeline stages a stage keeps its parameters gathered over the step
  // unless told otherwise: torchtitan's fsdp_reshard_after_forward "default"
  // (`not pp_enabled`), NeMo Automodel's apply_fsdp (`not pp_enabled`).
  if (!training->has_reshard_after_forward()) training->set_reshard_after_forward(training->mesh().pp() <= 1);
  if (!training->has_compiled()) training->set_compiled(false);
  if (training->compile_scope() == COMPILE_SCOPE_UNSPECIFIED) training->set_compile_scope(WHOLE_MODEL);
  if (training->attention() == ATTENTION_KERNEL_UNSPECIFIED) training->set_attention(FLASH_ATTENTION_2);
  if (training->loss() == LOSS_KERNEL_UNSPECIFIED) training->set_loss(FP32_LOGITS);
  if (training->norm() == NORM_KERNEL_UNSPECIFIED) training->set_norm(EAGER_NORM);
  if (training->kv_heads() == KEY_VALUE_HEADS_UNSPECIFIED) training->set_kv_heads(NATIVE_KV);
  if (training->projections() == PROJECTIONS_UNSPECIFIED) training->set_projections(CHECKPOINT_PROJECTIONS);
  Experts* experts = training->mutable_experts();
  if (!experts->has_busiest_load()) experts->set_busiest_load(1);
  if (experts->kernel() == EXPERT_KERNEL_UNSPECIFIED) experts->set_kernel(GROUPED);
  if (experts->epilogue() == EXPERT_EPILOGUE_UNSPECIFIED) experts->set_epilogue(FUSED_EPILOGUE);
  if (training->accumulation_gradient_sync() == ACCUMULATION_GRADIENT_SYNC_UNSPECIFIED) {
    training->set_accumulation_gradient_sync(EVERY_MICRO_BATCH);
  }
  if (training->strategy() == DDP) {
    DataParallel* ddp = training->mutable_ddp();
    if (!ddp->has_bucket_cap_mb()) ddp->set_bucket_cap_mb(25);  // torch's default bucket_cap_mb
  }
  if (training->strategy() == MEGATRON_DDP) {
    // Megatron-LM's DistributedDataParallel (distributed_data_parallel.py):
    // buckets of max(40M, 1M x dp) parameters, dp its data-parallel group
    // (dp_replicate x dp_shard, context parallelism aside); both overlaps off.
    MegatronDataParallel* ddp = training->mutable_megatron_ddp();
    const int64_t dp = int64_t{training->mesh().dp_replicate()} * training->mesh().dp_shard();
    if (!ddp->has_bucket_size()) ddp->set_bucket_size(std::max<int64_t>(40'000'000, 1'000'000 * dp));
    if (!ddp->has_overlap_grad_reduce()) ddp->set_overlap_grad_reduce(false);
    if (!ddp->has_overlap_param_gather()) ddp->set_overlap_param_gather(false);
    if (!ddp->has_gradient_accumulation_fusion()) ddp->set_gradient_accumulation_fusion(true);
    if (!ddp->has_torch_ddp_buckets()) ddp->set_torch_ddp_buckets(false);
  }
  if (!training->allocator().has_expandable_segments()) training->mutable_allocator()->set_expandable_segments(false);
  if (!training->allocator().has_outside_gib()) {
    // A host rank has no CUDA context and no NCCL communicator.
    const double outside = is_host_rank(gpu.preset()) ? 0 : default_outside_allocator_gib(*training);
    training->mutable_allocator()->set_outside_gib(outside);
  }
}

void default_run(Run* run) {
  if (!run->has_steps()) run->set_steps(3);
  if (!run->has_warmup_steps()) run->set_warmup_steps(1);
  if (!run->has_seed()) run->set_seed(1234);
  if (!run->has_model_scale()) run->set_model_scale(1.0);
}

// Sources in docs/SIMULATOR.md section 9.
void default_goodput(Goodput* goodput) {
  // Llama 3 (arXiv 2407.21783, section 3.3.4): 419 unexpected interruptions
  // in 54 days on 16,384 GPUs.
  if (!goodput->has_interruptions_per_gpu_hour()) goodput->set_interruptions_per_gpu_hour(419.0 / (54.0 * 24.0 * 16384.0));
  // NVIDIA DGX SuperPOD H100 reference architecture: over 40 GB/s from the storage fabric into one node.
  if (!goodput->has_storage_gbytes_per_s_per_node()) goodput->set_storage_gbytes_per_s_per_node(40);
  // Llama 3's Tectonic: 2 TB/s sustained (7 TB/s peak).
  if (!goodput->has_storage_aggregate_tbytes_per_s()) goodput->set_storage_aggregate_tbytes_per_s(2);
  if (!goodput->has_async_checkpoint()) goodput->set_async_checkpoint(false);
  // H100 SXM datasheet: PCIe Gen5, 128 GB/s both directions.
  if (!goodput->has_host_copy_gbytes_per_s()) goodput->set_host_copy_gbytes_per_s(64);
  // PyTorch's NCCL timeout (kProcessGroupNCCLDefaultTimeout, ProcessGroupNCCL.hpp).
  if (!goodput->has_restart_minutes()) goodput->set_restart_minutes(10);
}

// Only the what-if blocks that are written get defaults: a scenario without
// one stays without.
void default_whatif(WhatIf* whatif) {
  if (whatif->has_slow_gpus()) {
    SlowGpus* slow = whatif->mutable_slow_gpus();
    if (!slow->has_fraction()) slow->set_fraction(0.5);
    if (!slow->has_seed()) slow->set_seed(1);
  }
  if (whatif->has_slow_links()) {
    SlowLinks* slow = whatif->mutable_slow_links();
    if (!slow->has_fraction()) slow->set_fraction(0.5);
    if (!slow->has_seed()) slow->set_seed(1);
  }
  if (whatif->has_jitter()) {
    ComputeJitter* jitter = whatif->mutable_jitter();
    if (jitter->distribution() == JITTER_DISTRIBUTION_UNSPECIFIED) jitter->set_distribution(NORMAL);
    if (!jitter->has_seed()) jitter->set_seed(1);
  }
}

}  // namespace

Scenario with_defaults(const Scenario& written) {
  Scenario scenario = written;
  default_cluster(scenario.mutable_cluster());
  default_training(scenario.mutable_training(), total_gpus(scenario), scenario.cluster().gpu());
  default_run(scenario.mutable_run());
  default_goodput(scenario.mutable_goodput());
  if (scenario.has_whatif()) default_whatif(scenario.mutable_whatif());
  return scenario;
}

int64_t total_gpus(const Scenario& scenario) {
  return static_cast<int64_t>(scenario.cluster().gpus_per_node()) * scenario.cluster().nodes();
}

double peak_bf16_flops(const Gpu& gpu) { return gpu.peak_bf16_tflops() * 1e12; }

int64_t hbm_capacity_bytes(const Gpu& gpu) {
  return checked_count(gpu.hbm_capacity_gib() * kGiB, "cluster.gpu.hbm_capacity_gib");
}

int64_t allocator_capacity_bytes(const Scenario& scenario) {
  const Gpu& gpu = scenario.cluster().gpu();
  const double gib = gpu.hbm_capacity_gib() - scenario.training().allocator().outside_gib();
  return checked_count(std::max(0.0, gib) * kGiB, "training.allocator.outside_gib");
}

bool steps_optimizer(const Training& training) { return !training.has_optimizer_step() || training.optimizer_step(); }

bool whole_experts(const Mesh& mesh) { return mesh.tp() > 1 && mesh.has_expert_tp() && mesh.expert_tp() == 1; }

bool vocabulary_sharded_logits(const Mesh& mesh) {
  return mesh.tp() > 1 && (!mesh.has_vocabulary_parallel() || mesh.vocabulary_parallel()) && !mesh.gathered_logits();
}

bool reduces_unit_by_unit(Strategy strategy) {
  return strategy != DDP && strategy != MEGATRON_DDP && strategy != MEGATRON;
}

bool expert_overlap_runs(Strategy strategy, int64_t ep, int64_t pp, PipelineSchedule schedule, bool full_recompute) {
  return strategy == MEGATRON_DDP && ep > 1 && (pp <= 1 || schedule == INTERLEAVED_1F1B) && !full_recompute;
}

int64_t global_batch_sequences(const Scenario& scenario) {
  const Training& t = scenario.training();
  const int64_t per_gpu = checked_mul(t.micro_batch_size(), t.gradient_accumulation_steps(), "training.gradient_accumulation_steps");
  // The tp ranks of a model copy share its sequences, the cp ranks each one,
  // the pp stages pass them on.
  const int64_t model_parallel =
      int64_t{std::max(1, t.mesh().tp())} * std::max(1, t.mesh().cp()) * std::max(1, t.mesh().pp());
  return checked_mul(total_gpus(scenario) / model_parallel, per_gpu, "cluster.nodes");
}

}  // namespace ragged::scenarios
