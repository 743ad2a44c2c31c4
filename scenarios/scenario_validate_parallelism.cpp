#include <fmt/format.h>

#include "scenarios/scenario_checker.hpp"

namespace ragged::scenarios::validation {

// The pipeline block against the mesh and the batch; what needs the model
// (layers per stage) is checked once it is built (planner/pipeline_stages.cpp).
void check_pipeline(const Training& t, Checker& c) {
  const Pipeline& p = t.pipeline();
  const int64_t pp = t.mesh().pp();
  if (pp == 1) {
    if (t.has_pipeline()) {
      c.fail("training.pipeline", "a pipeline block without pipeline stages: set mesh.pp above 1, or remove the block");
    }
    return;
  }
  if (!PipelineSchedule_IsValid(p.schedule()) || p.schedule() == PIPELINE_SCHEDULE_UNSPECIFIED) {
    c.unknown_value("training.pipeline.schedule", p.schedule(), "GPIPE, ONE_F_ONE_B, INTERLEAVED_1F1B or ZERO_BUBBLE_H1",
                    "ONE_F_ONE_B");
    return;
  }
  if (!StageGradientSync_IsValid(p.gradient_sync())) {
    c.unknown_value("training.pipeline.gradient_sync", p.gradient_sync(),
                    "PER_UNIT_GRADIENT_SYNC, AFTER_CHUNK_BACKWARD or EVERY_MICRO_BATCH_GRADIENT_SYNC",
                    "PER_UNIT_GRADIENT_SYNC");
  } else if (p.gradient_sync() == EVERY_MICRO_BATCH_GRADIENT_SYNC) {
    if (!reduces_unit_by_unit(t.strategy())) {
      c.fail("training.pipeline.gradient_sync",
             fmt::format("EVERY_MICRO_BATCH_GRADIENT_SYNC reduce-scatters an FSDP unit's gradients every micro-batch; "
                         "{} reduces its own way: use PER_UNIT_GRADIENT_SYNC",
                         strategy_name(t.strategy())));
    } else if (p.schedule() == ZERO_BUBBLE_H1) {
      c.fail("training.pipeline.gradient_sync",
             "EVERY_MICRO_BATCH_GRADIENT_SYNC with ZERO_BUBBLE_H1 (weight gradients "
             "split from the backward) is not modelled: use PER_UNIT_GRADIENT_SYNC");
    } else if (t.loss() == CHUNKED) {
      c.fail("training.pipeline.gradient_sync",
             "EVERY_MICRO_BATCH_GRADIENT_SYNC with the CHUNKED loss (the head's "
             "gradient written in its forward) is not modelled: use "
             "PER_UNIT_GRADIENT_SYNC");
    }
  }
  if (!PipelineReceiveBuffers_IsValid(p.receive_buffers())) {
    c.unknown_value("training.pipeline.receive_buffers", p.receive_buffers(),
                    "RECEIVE_WHILE_IN_FLIGHT or ONE_BUFFER_PER_MICRO_BATCH", "RECEIVE_WHILE_IN_FLIGHT");
  }
  if (p.micro_batches() != t.gradient_accumulation_steps()) {
    c.fail("training.pipeline.micro_batches",
           fmt::format("micro_batches {} and gradient_accumulation_steps {} are the same micro-batches of a step: set "
                       "one of them", p.micro_batches(), t.gradient_accumulation_steps()));
  }
  const int64_t v = p.virtual_stages();
  if (p.schedule() == INTERLEAVED_1F1B) {
    if (v < 2) {
      c.fail("training.pipeline.virtual_stages", fmt::format("virtual_stages is {}; INTERLEAVED_1F1B runs 2 or more "
                                                             "model chunks per rank", v));
    } else if (p.micro_batches() % pp != 0) {
      c.fail("training.pipeline.micro_batches",
             fmt::format("INTERLEAVED_1F1B runs micro-batches in rounds of pp ({}); {} is not a multiple: use {}", pp,
                         p.micro_batches(), (p.micro_batches() / pp + 1) * pp));
    }
  } else if (v != 1) {
    c.fail("training.pipeline.virtual_stages", fmt::format("virtual_stages is {}; only INTERLEAVED_1F1B runs more than "
                                                           "one model chunk per rank", v));
  }
  if (p.layers_per_stage_size() > 0 && p.layers_per_stage_size() != pp * v) {
    c.fail("training.pipeline.layers_per_stage",
           fmt::format("{} entries for {} stages (pp {} x virtual_stages {}): give one per stage, or none for a "
                       "balanced split", p.layers_per_stage_size(), pp * v, pp, v));
  }
  // The first and the last chunk may hold no block: the embedding or the
  // head alone (Llama 3's stages, arXiv:2407.21783 section 3.3.2).
  for (int i = 0; i < p.layers_per_stage_size(); ++i) {
    const bool end = i == 0 || i == p.layers_per_stage_size() - 1;
    if (p.layers_per_stage(i) < (end ? 0 : 1)) {
      c.fail(fmt::format("training.pipeline.layers_per_stage[{}]", i),
             fmt::format("{} blocks; every stage between the first and the last holds at least one (the first may "
                         "hold the embedding alone, the last the head alone)",
                         p.layers_per_stage(i)));
    }
  }
}

// Megatron-Core's combined 1F1B (training.experts.overlap_all_to_all) and
// what its TransformerConfig asserts (transformer_config.py, __post_init__).
void check_expert_overlap(const Training& t, Checker& c) {
  if (t.experts().delay_weight_gradients()) {
    if (!t.experts().overlap_all_to_all()) {
      c.fail("training.experts.delay_weight_gradients",
             "Megatron delays the weight gradients only with the overlapped all-to-alls: set "
             "experts.overlap_all_to_all, or remove delay_weight_gradients");
    } else if (t.strategy() == MEGATRON_DDP && !t.megatron_ddp().gradient_accumulation_fusion()) {
      c.fail("training.experts.delay_weight_gradients",
             "modelled with gradient accumulation fusion (the weight gradients added into the main gradients): "
             "set megatron_ddp.gradient_accumulation_fusion true, or remove delay_weight_gradients");
    }
  }
  if (!t.experts().overlap_all_to_all()) return;
  const std::string field = "training.experts.overlap_all_to_all";
  if (t.mesh().ep() < 2) {
    c.fail(field, "the overlap hides expert-parallel all-to-alls: set mesh.ep above 1, or remove overlap_all_to_all");
  } else if (t.strategy() == MEGATRON) {
    // combined_1f1b.py refuses Megatron-FSDP under interleaved stages.
    c.fail(field,
           "Megatron-FSDP's combined step (without pipeline stages only: Megatron refuses it under interleaved "
           "stages) is not modelled: use strategy MEGATRON_DDP, or remove overlap_all_to_all");
  } else if (t.strategy() != MEGATRON_DDP) {
    c.fail(field, fmt::format("{} has no combined 1F1B schedule (Megatron-Core's): use strategy MEGATRON_DDP, or "
                              "remove overlap_all_to_all",
                              strategy_name(t.strategy())));
  } else if (t.mesh().pp() > 1 && t.pipeline().schedule() != INTERLEAVED_1F1B) {
    c.fail(field,
           "Megatron overlaps the all-to-alls over pipeline stages only with virtual stages: set "
           "pipeline.schedule INTERLEAVED_1F1B, or remove overlap_all_to_all");
  } else if (t.activation_checkpointing() == FULL || t.experts().checkpointing() == FULL) {
    c.fail(field,
           "Megatron refuses the overlap under full recomputation of the blocks or of the experts "
           "(--recompute-modules moe): checkpoint SELECTIVE or NONE, or remove overlap_all_to_all");
  }
}

// The mesh (scenario.proto, Mesh) against the GPUs and the FSDP groups it
// sets; what needs the model (heads, experts) is checked once it is built
// (planner/mesh.cpp). Range problems are reported by field_ranges.cpp.
void check_mesh(const Training& t, int64_t gpus, Checker& c) {
  const Mesh& m = t.mesh();
  if (m.tp() < 1 || m.cp() < 1 || m.ep() < 1 || m.dp_shard() < 1 || m.dp_replicate() < 1 || m.pp() < 1) return;
  const int64_t tp = m.tp();
  if (gpus % tp != 0) {
    c.fail("training.mesh.tp", fmt::format("tp is {}; it must divide the {} GPUs", tp, gpus));
    return;
  }
  if (gpus % (tp * m.pp()) != 0) {
    c.fail("training.mesh.pp", fmt::format("pp is {}; tp {} x pp {} must divide the {} GPUs", m.pp(), tp, m.pp(), gpus));
    return;
  }
  const int64_t model_ranks = gpus / (tp * m.pp());  // ranks of one stage's tp rank
  check_pipeline(t, c);
  check_expert_overlap(t, c);
  if (t.shard_group_size() < 1 || model_ranks % t.shard_group_size() != 0) {
    c.fail("training.shard_group_size",
           fmt::format("shard_group_size is {}; it must divide the {} GPUs{} (leave it unset to shard over all of them)",
                       t.shard_group_size(), model_ranks,
                       tp * m.pp() > 1 ? fmt::format(" of one stage's tp rank ({} / tp {} / pp {})", gpus, tp, m.pp()) : ""));
    return;
  }
  if (int64_t{t.shard_group_size()} * t.replicate_group_size() * tp * m.pp() != gpus) {
    c.fail("training.replicate_group_size",
           fmt::format("shard_group_size {} x replicate_group_size {}{}{} is not the {} GPUs of the cluster; set one of "
                       "them and leave the other unset", t.shard_group_size(), t.replicate_group_size(),
                       tp > 1 ? fmt::format(" x mesh.tp {}", tp) : "", m.pp() > 1 ? fmt::format(" x mesh.pp {}", m.pp()) : "",
                       gpus));
    return;
  }
  if (t.shard_group_size() % m.cp() != 0) {
    c.fail("training.mesh.cp", fmt::format("cp is {}; FSDP shards over dp_shard x cp, so cp must divide "
                                           "shard_group_size {}", m.cp(), t.shard_group_size()));
    return;
  }
  if (int64_t{m.dp_shard()} * m.cp() != t.shard_group_size()) {
    c.fail("training.mesh.dp_shard", fmt::format("dp_shard {} x cp {} is {}, but shard_group_size is {}: FSDP shards "
                                                 "over dp_shard x cp; set one of them and leave the other unset",
                                                 m.dp_shard(), m.cp(), int64_t{m.dp_shard()} * m.cp(), t.shard_group_size()));
  }
  if (m.dp_replicate() != t.replicate_group_size()) {
    c.fail("training.mesh.dp_replicate", fmt::format("dp_replicate is {}, but replicate_group_size is {}; they are "
                                                     "the same replicas: set one of them", m.dp_replicate(),
                                                     t.replicate_group_size()));
  }
  if (m.expert_dispatcher() != ALL_TO_ALL && m.expert_dispatcher() != DEEPEP) {
    c.unknown_value("training.mesh.expert_dispatcher", m.expert_dispatcher(), "ALL_TO_ALL or DEEPEP", "ALL_TO_ALL");
  }
  if (m.expert_routing() != UNIFORM && m.expert_routing() != CONSECUTIVE) {
    c.unknown_value("training.mesh.expert_routing", m.expert_routing(), "UNIFORM or CONSECUTIVE", "UNIFORM");
  }
  if (m.sequence_layout() != SEQUENCE_FIRST && m.sequence_layout() != BATCH_FIRST) {
    c.unknown_value("training.mesh.sequence_layout", m.sequence_layout(), "SEQUENCE_FIRST or BATCH_FIRST",
                    "SEQUENCE_FIRST");
  }
  if (m.column_input() != PER_MODULE && m.column_input() != PER_PROJECTION) {
    c.unknown_value("training.mesh.column_input", m.column_input(), "PER_MODULE or PER_PROJECTION", "PER_MODULE");
  }
  if (m.tp_overlap() != TP_OVERLAP_NONE && m.tp_overlap() != ASYNC_TP && m.tp_overlap() != USERBUFFERS) {
    c.unknown_value("training.mesh.tp_overlap", m.tp_overlap(), "TP_OVERLAP_NONE, ASYNC_TP or USERBUFFERS",
                    "TP_OVERLAP_NONE");
  } else if (m.tp_overlap() != TP_OVERLAP_NONE && (tp == 1 || !m.sequence_parallel())) {
    c.fail("training.mesh.tp_overlap",
           fmt::format("{} overlaps sequence parallelism's all-gathers and reduce-scatters with the GEMMs; {}: set "
                       "tp_overlap: TP_OVERLAP_NONE, or {}",
                       TpOverlap_Name(m.tp_overlap()), tp == 1 ? "tp is 1" : "sequence_parallel is false",
                       tp == 1 ? "a training.mesh.tp above 1" : "sequence_parallel: true"));
  }
  const bool whole = whole_experts(m);
  if (m.expert_tp() != tp && m.expert_tp() != 1) {
    c.fail("training.mesh.expert_tp",
           fmt::format("expert_tp is {}; the routed experts are split over the same tp ranks as the MLP (expert_tp = "
                       "tp {}, the default) or whole on each rank (expert_tp 1): other splits are not modelled",
                       m.expert_tp(), tp));
  } else if (whole && m.ep() == 1) {
    c.fail("training.mesh.expert_tp", "expert_tp 1 keeps each routed expert whole on its expert-parallel rank, but "
                                      "ep is 1: set training.mesh.ep above 1, or leave expert_tp unset");
  } else if (whole && !m.sequence_parallel()) {
    c.fail("training.mesh.expert_tp", "with expert_tp 1 each tp rank dispatches its own 1/tp of the tokens, which "
                                      "sequence parallelism gives it: set sequence_parallel: true, or leave "
                                      "expert_tp unset");
  }
  if (whole && (tp * t.shard_group_size()) % m.ep() != 0) {
    c.fail("training.mesh.ep", fmt::format("ep is {}; with whole experts (expert_tp 1) expert parallelism is carved "
                                           "out of tp x dp_shard x cp ({}), so ep must divide it", m.ep(),
                                           tp * t.shard_group_size()));
  } else if (!whole && t.shard_group_size() % m.ep() != 0) {
    c.fail("training.mesh.ep", fmt::format("ep is {}; expert parallelism is carved out of dp_shard x cp ({}), so ep "
                                           "must divide it", m.ep(), t.shard_group_size()));
  }
  // Under expert parallelism a routed expert's matrices are owned within its
  // expert shard group (planner::OwnedMatrix::group); a tp-cut matrix would
  // need its owner to gather across the tp group too.
  if (tp > 1 && (t.optimizer().has_muon() || t.optimizer().has_shampoo())) {
    c.fail("training.mesh.tp",
           fmt::format("{} owns whole matrices, which tensor parallelism splits over ranks outside the shard group; "
                       "that ownership is not modelled: use adamw or adam8bit, or tp 1",
                       t.optimizer().has_muon() ? "Muon" : "Shampoo"));
  }
  if (m.cp() > 1 && t.attention() == MATH) {
    c.fail("training.mesh.cp", "context parallelism runs a flash attention kernel over chunks of the sequence; the "
                               "MATH backend's scores are not split: use FLASH_ATTENTION_2 or 3");
  }
  const int64_t cp = m.cp();
  if (cp > 1 && t.sequence_length() % (2 * cp) != 0) {
    c.fail("training.mesh.cp", fmt::format("cp {} cuts each sequence into 2 x cp = {} chunks for causal load balance; "
                                           "sequence_length {} is not a multiple of {}", cp, 2 * cp,
                                           t.sequence_length(), 2 * cp));
  } else if (tp > 1 && m.sequence_parallel() &&
             (int64_t{t.micro_batch_size()} * t.sequence_length() / cp) % tp != 0) {
    c.fail("training.mesh.sequence_parallel",
           fmt::format("sequence parallelism splits a micro-batch's {} tokens per cp rank over tp {}, which does not "
                       "divide them: pick a sequence_length or micro_batch_size that does, or set sequence_parallel: false",
                       int64_t{t.micro_batch_size()} * t.sequence_length() / cp, tp));
  }
  if (m.gathered_logits()) {
    if (tp < 2) {
      c.fail("training.mesh.gathered_logits", "gathers the head's logits over tensor parallelism, but tp is 1: set tp, "
                                              "or remove gathered_logits");
    } else if (m.has_vocabulary_parallel() && !m.vocabulary_parallel()) {
      c.fail("training.mesh.gathered_logits", "a replicated head computes its logits whole, there is nothing to gather: "
                                              "remove gathered_logits or vocabulary_parallel: false");
    } else if (t.loss() == CHUNKED) {
      c.fail("training.mesh.gathered_logits", "a chunked loss never makes the logits whole: use another "
                                              "training.loss, or remove gathered_logits");
    }
  }
  if (t.loss() == LOSS_PARALLEL && !vocabulary_sharded_logits(m)) {
    c.fail("training.loss", "LOSS_PARALLEL is torch's loss_parallel over logits sharded by vocabulary over tensor "
                            "parallelism: it needs mesh.tp of 2 or more with a vocabulary-parallel head and no "
                            "gathered_logits; use FP32_LOGITS otherwise");
  }
  if (m.has_vocabulary_parallel() && !m.vocabulary_parallel() && m.sequence_parallel()) {
    c.fail("training.mesh.vocabulary_parallel",
           "a replicated embedding and head read and write the whole tokens' hidden states, which sequence "
           "parallelism spreads over tp: set sequence_parallel: false with it");
  }
}

}  // namespace ragged::scenarios::validation
