// The Programs of a pipeline's stages (training.mesh.pp > 1): every send
// meets one receive on the neighbouring stage with the same bytes, every
// unit runs on one stage, each stage's Program keeps the Program contract,
// and the schedules hold as many micro-batches' activations as they are
// published to (1F1B: pp on the first stage; GPipe: all of them).

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "planner/scenario_plan.hpp"
#include "program_test_util.hpp"
#include "scenarios/scenario_loader.hpp"

namespace ragged::planner {
namespace {

using program_test::graph_problems;
using program_test::kTinyLlama;

struct Stages {
  ResolvedScenario resolved;
  PipelinePlan plan;
  std::vector<Program> programs;
};

// The tiny Llama (4 blocks, width 256) on 8 GPUs, micro-batches of 2 x 512.
Stages stages_of(const std::string& fields) {
  Stages s{resolve_scenario(scenarios::parse_scenario(
               std::string(kTinyLlama) + "training { micro_batch_size: 2 sequence_length: 512 " + fields + " }\n",
               scenarios::ScenarioFormat::kText, "pipeline_test.textproto", RAGGED_SOURCE_DIR)),
           {},
           {}};
  s.plan = plan_pipeline(s.resolved);
  s.programs = build_stage_programs(s.resolved, s.plan);
  return s;
}

TEST(PipelineProgram, EverySendMeetsOneReceiveOnTheNeighbourStage) {
  for (const std::string fields : {"mesh { pp: 2 } gradient_accumulation_steps: 4",
                                   "mesh { pp: 2 } gradient_accumulation_steps: 4 pipeline { schedule: GPIPE }",
                                   "mesh { pp: 2 } gradient_accumulation_steps: 4 pipeline { schedule: ZERO_BUBBLE_H1 }",
                                   "mesh { pp: 2 } gradient_accumulation_steps: 4 "
                                   "pipeline { schedule: INTERLEAVED_1F1B virtual_stages: 2 }"}) {
    const Stages s = stages_of(fields);
    struct Ends {
      int sends = 0, receives = 0, send_stage = -1, receive_stage = -1, send_peer = -1, receive_peer = -1;
      int64_t send_bytes = 0, receive_bytes = 0;
    };
    std::map<int64_t, Ends> messages;
    for (const Program& p : s.programs) {
      for (const Op& op : p.ops) {
        Ends& e = messages[op.message];
        if (op.kind == OpKind::kSend) {
          ++e.sends;
          e.send_stage = p.stage;
          e.send_peer = op.peer;
          e.send_bytes = op.bytes;
        } else if (op.kind == OpKind::kRecv) {
          ++e.receives;
          e.receive_stage = p.stage;
          e.receive_peer = op.peer;
          e.receive_bytes = op.bytes;
        } else {
          messages.erase(op.message);
        }
      }
    }
    // Each micro-batch crosses every boundary between chunks twice (its
    // activations forward, their gradients back).
    const int64_t chunks = s.plan.stages.chunk_count();
    EXPECT_EQ(static_cast<int64_t>(messages.size()), 4 * (chunks - 1) * 2) << fields;
    const int64_t hidden_states = 2 * 512 * 256 * 2;  // tokens x hidden x bf16
    for (const auto& [id, e] : messages) {
      EXPECT_EQ(e.sends, 1) << fields << ", message " << id;
      EXPECT_EQ(e.receives, 1) << fields << ", message " << id;
      EXPECT_NE(e.send_stage, e.receive_stage);
      EXPECT_EQ(e.send_peer, e.receive_stage);
      EXPECT_EQ(e.receive_peer, e.send_stage);
      EXPECT_EQ(e.send_bytes, hidden_states);
      EXPECT_EQ(e.receive_bytes, hidden_states);
    }
    std::printf("%-80s %zu messages of %lld bytes\n", fields.c_str(), messages.size(),
                static_cast<long long>(hidden_states));
  }
}

TEST(PipelineProgram, EveryScheduleKeepsTheProgramContract) {
  for (const std::string schedule : {"GPIPE", "ONE_F_ONE_B", "ZERO_BUBBLE_H1"}) {
    for (const std::string checkpointing : {"NONE", "SELECTIVE", "FULL"}) {
      const Stages s = stages_of("mesh { pp: 2 } gradient_accumulation_steps: 4 activation_checkpointing: " +
                                 checkpointing + " pipeline { schedule: " + schedule + " }");
      for (const Program& p : s.programs) {
        for (const std::string& problem : graph_problems(p)) {
          ADD_FAILURE() << schedule << ", " << checkpointing << ", stage " << p.stage << ": " << problem;
        }
      }
    }
  }
  const Stages s = stages_of("mesh { pp: 2 } gradient_accumulation_steps: 4 "
                             "pipeline { schedule: INTERLEAVED_1F1B virtual_stages: 2 }");
  for (const Program& p : s.programs) {
    for (const std::string& problem : graph_problems(p)) ADD_FAILURE() << "interleaved, stage " << p.stage << ": " << problem;
  }
}

// Llama 3's split: the first chunk runs the embedding alone, the last the
// head alone; their stages still send and receive, and keep the contract.
TEST(PipelineProgram, AnEmbeddingAloneAndAHeadAloneMakeChunksOfTheirOwn) {
  const Stages s = stages_of("mesh { pp: 2 } gradient_accumulation_steps: 4 pipeline { schedule: INTERLEAVED_1F1B "
                             "virtual_stages: 2 layers_per_stage: [0, 2, 2, 0] }");
  const models::ModelSpec& model = s.resolved.model;
  ASSERT_EQ(s.plan.stages.chunks.size(), 4u);
  ASSERT_EQ(s.plan.stages.chunks.front().size(), 1u);
  EXPECT_EQ(model.units[static_cast<size_t>(s.plan.stages.chunks.front()[0])].kind, models::UnitKind::kEmbedding);
  ASSERT_EQ(s.plan.stages.chunks.back().size(), 1u);
  EXPECT_EQ(model.units[static_cast<size_t>(s.plan.stages.chunks.back()[0])].kind, models::UnitKind::kHead);
  EXPECT_EQ(s.plan.stages.blocks_per_chunk(model), (std::vector<int64_t>{0, 2, 2, 0}));
  for (const Program& p : s.programs) {
    EXPECT_EQ(p.count(OpKind::kSend), p.count(OpKind::kRecv)) << "stage " << p.stage;
    EXPECT_GT(p.count(OpKind::kSend), 0u) << "stage " << p.stage;
    for (const std::string& problem : graph_problems(p)) ADD_FAILURE() << "stage " << p.stage << ": " << problem;
  }
}

TEST(PipelineProgram, ZeroBubbleH1SplitsEveryBackwardIntoItsInputAndItsWeightGradients) {
  const Stages one = stages_of("mesh { pp: 2 } gradient_accumulation_steps: 4");
  const Stages zb = stages_of("mesh { pp: 2 } gradient_accumulation_steps: 4 pipeline { schedule: ZERO_BUBBLE_H1 }");
  for (size_t st = 0; st < 2; ++st) {
    double whole = 0, input = 0, weight = 0;
    for (const Op& op : one.programs[st].ops) {
      if (op.kind == OpKind::kComputeBwd) whole += op.flops;
    }
    for (const Op& op : zb.programs[st].ops) {
      if (op.kind != OpKind::kComputeBwd) continue;
      if (op.name.find("(weights)") != std::string::npos) weight += op.flops;
      else input += op.flops;
    }
    std::printf("stage %zu: backward %.4g FLOPs = input %.4g + weights %.4g\n", st, whole, input, weight);
    EXPECT_NEAR(input + weight, whole, 1e-9 * whole);
    EXPECT_GT(weight, 0.3 * whole);  // dW is about half a block's GEMMs
  }
}

// training.pipeline.gradient_sync AFTER_CHUNK_BACKWARD (torch.distributed.
// pipelining's run_post_backward): a stage reduces its chunk's gradients only
// after the chunk's last backward, and its compute stream (or the gradient
// send) waits for every reduction; PER_UNIT_GRADIENT_SYNC reduces a unit's
// beside the backward of the units below it. Same reductions, same bytes.
// torch.distributed.pipelining allocates a receive buffer per micro-batch of
// the step for each neighbour stage and keeps them: the first and last stage
// one per micro-batch (the output's gradient, the input's activations), a
// middle stage two, each a micro-batch's hidden states; by default only the
// micro-batches in flight hold what they received (none of it persistent).
TEST(PipelineProgram, TorchPipeliningKeepsAReceiveBufferPerMicroBatchAndNeighbour) {
  const int64_t boundary = 2 * 512 * 256 * 2;  // 2 x 512 tokens x width 256 in bf16
  for (const int micro_batches : {4, 8}) {
    const std::string base = "mesh { pp: 4 } gradient_accumulation_steps: " + std::to_string(micro_batches) + " ";
    const Stages kept = stages_of(base + "pipeline { receive_buffers: ONE_BUFFER_PER_MICRO_BATCH }");
    const Stages in_flight = stages_of(base);
    ASSERT_EQ(kept.programs.size(), 4u);
    for (size_t st = 0; st < 4; ++st) {
      const int neighbours = st == 0 || st == 3 ? 1 : 2;
      EXPECT_EQ(kept.programs[st].persistent.pipeline_receive_buffers, neighbours * micro_batches * boundary) << st;
      EXPECT_EQ(in_flight.programs[st].persistent.pipeline_receive_buffers, 0) << st;
      EXPECT_EQ(kept.programs[st].persistent.total() - in_flight.programs[st].persistent.total(),
                neighbours * micro_batches * boundary)
          << st;
    }
  }
  // Interleaved, two chunks a rank: every chunk's neighbours lie on other ranks
  // but the first chunk's input and the last chunk's output.
  const Stages interleaved = stages_of(
      "mesh { pp: 2 } gradient_accumulation_steps: 4 "
      "pipeline { schedule: INTERLEAVED_1F1B virtual_stages: 2 receive_buffers: ONE_BUFFER_PER_MICRO_BATCH }");
  for (size_t st = 0; st < 2; ++st) {
    EXPECT_EQ(interleaved.programs[st].persistent.pipeline_receive_buffers, 3 * 4 * boundary) << st;
  }
}

TEST(PipelineProgram, TorchPipeliningReducesAChunkAfterItsLastBackwardAndWaitsForIt) {
  const std::string base = "mesh { pp: 2 } gradient_accumulation_steps: 4 ";
  const Stages per_unit = stages_of(base);
  const Stages after = stages_of(base + "pipeline { gradient_sync: AFTER_CHUNK_BACKWARD }");
  for (size_t st = 0; st < 2; ++st) {
    const auto summary = [](const Program& p) {
      size_t last_bwd = 0, reductions = 0, before_last_bwd = 0, waited = 0;
      int64_t bytes = 0;
      for (size_t i = 0; i < p.ops.size(); ++i) {
        if (p.ops[i].kind == OpKind::kComputeBwd) last_bwd = i;
      }
      for (size_t i = 0; i < p.ops.size(); ++i) {
        if (p.ops[i].kind != OpKind::kReduceScatter) continue;
        ++reductions;
        bytes += p.ops[i].bytes;
        if (i < last_bwd) ++before_last_bwd;
        // The reduction's chain: the reduce-scatter and the ops of its unit
        // after it off the compute stream (the shard's accumulation).
        std::set<uint32_t> chain;
        for (size_t j = i; j < p.ops.size(); ++j) {
          if (p.ops[j].unit == p.ops[i].unit && p.ops[j].stream != Stream::kCompute) chain.insert(static_cast<uint32_t>(j));
        }
        for (const Op& later : p.ops) {
          // The step's work, not the optimizer (which waits for every reduction in both).
          const bool holds = (later.stream == Stream::kCompute && later.kind != OpKind::kOptimizer) ||
                             later.kind == OpKind::kSend;
          if (holds && std::any_of(later.deps.begin(), later.deps.end(), [&](uint32_t d) { return chain.count(d) > 0; })) {
            ++waited;
            break;
          }
        }
      }
      return std::array<int64_t, 4>{static_cast<int64_t>(reductions), bytes, static_cast<int64_t>(before_last_bwd),
                                    static_cast<int64_t>(waited)};
    };
    const auto a = summary(per_unit.programs[st]), b = summary(after.programs[st]);
    std::printf("stage %zu: reduce-scatters %lld (%lld bytes); issued before the chunk's last backward: per unit %lld, "
                "after chunk %lld; waited for by compute or the send: per unit %lld, after chunk %lld of %lld\n",
                st, static_cast<long long>(b[0]), static_cast<long long>(b[1]), static_cast<long long>(a[2]),
                static_cast<long long>(b[2]), static_cast<long long>(a[3]), static_cast<long long>(b[3]),
                static_cast<long long>(b[0]));
    EXPECT_EQ(a[0], b[0]);
    EXPECT_EQ(a[1], b[1]);
    EXPECT_GT(b[0], 1);
    EXPECT_GT(a[2], 0);       // per unit: the first units' reductions overlap the chunk's remaining backward
    EXPECT_EQ(b[2], 0);       // after chunk: none before the chunk's last backward
    // A stage with a neighbour behind it sends its last backward's gradient:
    // after chunk, every reduction holds the compute stream or the send;
    // per unit, not all of them do. (The first stage's last chunk has only
    // the optimizer after it, which waits for every reduction either way.)
    if (st > 0) {
      EXPECT_EQ(b[3], b[0]);
      EXPECT_LT(a[3], a[0]);
    }
    EXPECT_TRUE(graph_problems(after.programs[st]).empty());
  }
}

// torch.distributed.pipelining over FSDP2 with reshard_after_forward=True
// (stage.py turns only reshard_after_backward off): each forward reshards a
// block, each backward gathers it again and leaves it gathered, so the
// forward right after a backward needs no gather, nor a backward right
// after one. Under 1F1B stage s runs w = pp - s forwards before its first
// backward (each gathers), then m - w backwards each followed by a forward
// (the backward gathers), then w backwards (the first gathers): m + 1
// gathers of a block a step on every stage, against one kept. The stage's
// root group (its embedding or head) is never resharded after forward
// (FSDPState._lazy_init sets the root's post_forward_mesh_info to None):
// once. Kept gathered (the default with stages): once.
// FSDP2 under torch.distributed.pipelining (AFTER_CHUNK_BACKWARD): gradient
// sync is off for every backward of the step, so FSDPParamGroup.post_backward
// moves each unit's gradients into an accumulator of the reduce dtype: the
// first micro-batch's cast (read bf16, write fp32), each later one added
// (read both, write fp32), held to the chunk's reduction. Gradients already
// in the reduce dtype are kept as autograd made them; other runtimes
// (PER_UNIT_GRADIENT_SYNC) hold them in the parameters' dtype.
TEST(PipelineProgram, TorchPipeliningUnderFsdp2AccumulatesGradientsInTheReduceDtype) {
  const int micro_batches = 4;
  const std::string base = "strategy: FSDP2 mesh { pp: 2 } gradient_accumulation_steps: 4 ";
  struct Held {
    int64_t elements = 0;  // a unit's gathered elements (its held gradients' bytes over their dtype)
    int64_t bytes = 0;     // the held gradients' bytes, every unit of the stage
    int64_t accumulated = 0;
    int accumulations = 0;
  };
  const auto held = [](const Program& p, int64_t grad_bytes) {
    Held h;
    for (const Buffer& b : p.buffers) {
      if (b.kind != BufferKind::kUnshardedGrads) continue;
      h.bytes += b.bytes;
      h.elements += b.bytes / grad_bytes;
    }
    for (const Op& op : p.ops) {
      // Not the reduced shard's accumulation after the reduce-scatter, on its stream.
      if (op.kind != OpKind::kGradAccumulate || op.stream != Stream::kCompute) continue;
      h.accumulated += op.bytes;
      ++h.accumulations;
    }
    return h;
  };
  const Stages fp32 = stages_of(base + "pipeline { gradient_sync: AFTER_CHUNK_BACKWARD }");
  const Stages bf16 = stages_of(base + "precision { reduce: BF16 } pipeline { gradient_sync: AFTER_CHUNK_BACKWARD }");
  const Stages per_unit = stages_of(base);
  for (size_t st = 0; st < 2; ++st) {
    const Held a = held(fp32.programs[st], 4), b = held(bf16.programs[st], 2), c = held(per_unit.programs[st], 2);
    const int units = static_cast<int>(fp32.plan.stages.units_of(static_cast<int64_t>(st)).size());
    // Analytic: per element, the first micro-batch 2 + 4 bytes, each later 2 + 2 x 4 (fp32); bf16: 0, then 3 x 2.
    const int64_t expected_fp32 = a.elements * (6 + (micro_batches - 1) * 10);
    const int64_t expected_bf16 = b.elements * (micro_batches - 1) * 6;
    std::printf("stage %zu: held gradients fp32 %lld B (bf16 reduce %lld, per-unit sync %lld); accumulated "
                "analytic %lld simulated %lld B in %d ops; bf16 reduce analytic %lld simulated %lld B in %d ops\n",
                st, static_cast<long long>(a.bytes), static_cast<long long>(b.bytes), static_cast<long long>(c.bytes),
                static_cast<long long>(expected_fp32), static_cast<long long>(a.accumulated), a.accumulations,
                static_cast<long long>(expected_bf16), static_cast<long long>(b.accumulated), b.accumulations);
    EXPECT_GT(a.elements, 0);
    EXPECT_EQ(a.elements, b.elements);
    EXPECT_EQ(a.bytes, 2 * b.bytes);
    EXPECT_EQ(b.bytes, c.bytes);
    EXPECT_EQ(a.accumulated, expected_fp32);
    EXPECT_EQ(a.accumulations, units * micro_batches);
    EXPECT_EQ(b.accumulated, expected_bf16);
    EXPECT_EQ(b.accumulations, units * (micro_batches - 1));
    EXPECT_EQ(c.accumulations, 0);
    EXPECT_TRUE(graph_problems(fp32.programs[st]).empty());
  }
}

TEST(PipelineProgram, ReshardingAfterForwardGathersABlockForEachBackwardAndEachForwardNotAfterOne) {
  const int m = 4, pp = 2;
  const std::string base = "mesh { pp: 2 } gradient_accumulation_steps: 4 strategy: FSDP2 ";
  const Stages kept = stages_of(base);
  const Stages resharded = stages_of(base + "reshard_after_forward: true");
  for (int st = 0; st < pp; ++st) {
    const auto gathers = [](const Program& p) {
      std::map<int, int> out;
      for (const Op& op : p.ops) {
        if (op.kind == OpKind::kAllGather && op.group == Group::kShard) ++out[op.unit];
      }
      return out;
    };
    const auto once = gathers(kept.programs[static_cast<size_t>(st)]);
    const auto each = gathers(resharded.programs[static_cast<size_t>(st)]);
    const Program& p = resharded.programs[static_cast<size_t>(st)];
    const int expected = m + 1;
    for (const auto& [unit, count] : each) {
      const bool block = p.ops.end() != std::find_if(p.ops.begin(), p.ops.end(), [&](const Op& op) {
                           return op.unit == unit && op.name.rfind("layers.", 0) == 0;
                         });
      std::printf("stage %d unit %d (%s): %d all-gathers a step resharding after forward (analytic %d), %d kept\n", st,
                  unit, block ? "block" : "embedding/head", count, block ? expected : 1, once.at(unit));
      EXPECT_EQ(count, block ? expected : 1) << "stage " << st << " unit " << unit;
      EXPECT_EQ(once.at(unit), 1);
    }
    EXPECT_TRUE(graph_problems(p).empty());
  }
  // Every schedule builds resharding after forward and keeps the contract
  // (ZB-H1's weight passes gather nothing).
  for (const std::string schedule : {"GPIPE", "ZERO_BUBBLE_H1", "INTERLEAVED_1F1B virtual_stages: 2"}) {
    const Stages s = stages_of(base + "reshard_after_forward: true pipeline { schedule: " + schedule + " }");
    for (const Program& p : s.programs) EXPECT_TRUE(graph_problems(p).empty()) << schedule;
  }
}

TEST(PipelineProgram, EveryUnitRunsOnOneStageAndEachProgramKeepsTheContract) {
  const Stages s = stages_of("mesh { pp: 2 } gradient_accumulation_steps: 4");
  std::multiset<int> units;
  for (size_t st = 0; st < s.programs.size(); ++st) {
    const Program& p = s.programs[st];
    EXPECT_EQ(p.stage, static_cast<int>(st));
    EXPECT_EQ(p.stages, 2);
    for (const std::string& problem : graph_problems(p)) ADD_FAILURE() << "stage " << st << ": " << problem;
    const Plan& plan = s.plan.plans[st];
    for (const UnitPlan& u : plan.units) units.insert(u.unit_index);
    // Every unit of the stage runs forward and backward once per micro-batch.
    for (int u = 0; u < static_cast<int>(plan.units.size()); ++u) {
      int forwards = 0, backwards = 0;
      for (const Op& op : p.ops) {
        if (op.unit != u || op.loss_only) continue;
        forwards += op.kind == OpKind::kComputeFwd;
        backwards += op.kind == OpKind::kComputeBwd;
      }
      EXPECT_EQ(forwards, 4) << "stage " << st << " unit " << u;
      EXPECT_EQ(backwards, 4) << "stage " << st << " unit " << u;
    }
    // A GPU's tokens: the micro-batches' over the stages.
    EXPECT_EQ(p.tokens_per_step, 2 * 512 * 4 / 2);
  }
  const int model_units = static_cast<int>(s.resolved.model.units.size());
  ASSERT_EQ(static_cast<int>(units.size()), model_units);
  for (int u = 0; u < model_units; ++u) EXPECT_EQ(units.count(u), 1u) << "unit " << u;
}

// The most micro-batches whose activations the stage holds at once: live
// activation buffers of its last unit (each micro-batch's forward allocates
// one), walking its Program in issue order.
int most_micro_batches_held(const Program& p) {
  int unit = 0;
  for (const Op& op : p.ops) unit = std::max(unit, op.unit);
  program_test::LiveBuffers live(p);
  int most = 0;
  for (const Op& op : p.ops) {
    live.apply(op);
    most = std::max(most, live.count(BufferKind::kActivations, unit));
  }
  return most;
}

TEST(PipelineProgram, OneFOneBHoldsPpMicroBatchesOnTheFirstStageAndGpipeHoldsThemAll) {
  const int m = 8;
  const std::string common = "mesh { pp: 4 dp_shard: 2 } gradient_accumulation_steps: " + std::to_string(m);
  const Stages one = stages_of(common);
  const Stages gpipe = stages_of(common + " pipeline { schedule: GPIPE }");
  for (int st = 0; st < 4; ++st) {
    const int held_1f1b = most_micro_batches_held(one.programs[static_cast<size_t>(st)]);
    const int held_gpipe = most_micro_batches_held(gpipe.programs[static_cast<size_t>(st)]);
    std::printf("stage %d of 4, %d micro-batches: 1F1B holds %d, GPipe %d\n", st, m, held_1f1b, held_gpipe);
    EXPECT_EQ(held_1f1b, 4 - st);
    EXPECT_EQ(held_gpipe, m);
  }
}

// The error resolving the tiny Llama (or `model`) with `fields`; "" if none.
std::string resolve_error(const std::string& fields, const std::string& model = kTinyLlama) {
  try {
    resolve_scenario(scenarios::parse_scenario(model + "training { " + fields + " }\n",
                                               scenarios::ScenarioFormat::kText, "pipeline_test.textproto",
                                               RAGGED_SOURCE_DIR));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(PipelineProgram, WhatIsNotSimulatedYetIsRefusedByField) {
  EXPECT_EQ(resolve_error("mesh { pp: 2 } gradient_accumulation_steps: 2"), "");
  std::string tied = kTinyLlama;
  tied.replace(tied.find("num_layers"), 0, "tie_word_embeddings: true ");
  EXPECT_NE(resolve_error("mesh { pp: 2 }", tied).find("training.mesh.pp: pp 2: model"), std::string::npos);
  EXPECT_NE(resolve_error("mesh { pp: 2 } } whatif { slow_gpus { count: 1 fraction: 0.5 }").find("whatif: "),
            std::string::npos);
  // 4 blocks cannot make 8 chunks.
  EXPECT_NE(resolve_error("mesh { pp: 8 }").find("training.mesh.pp: pp 8 x virtual_stages 1 is 8 pipeline chunks"),
            std::string::npos);
}

// training.pipeline.gradient_sync EVERY_MICRO_BATCH_GRADIENT_SYNC: a stage
// reduce-scatters each unit's gradients after every micro-batch's backward
// (micro-batches x units reductions, where PER_UNIT_GRADIENT_SYNC reduces each
// unit once, after its last backward), and no unit's unsharded gradients
// outlive the micro-batch that made them; its parameters are still gathered
// once a step.
TEST(PipelineProgram, ReducingEveryMicroBatchReducesEachUnitsGradientsOnceAMicroBatch) {
  const std::string base = "mesh { pp: 2 } gradient_accumulation_steps: 4 ";
  const Stages per_unit = stages_of(base);
  const Stages every = stages_of(base + "pipeline { gradient_sync: EVERY_MICRO_BATCH_GRADIENT_SYNC }");
  for (size_t st = 0; st < 2; ++st) {
    const auto count = [](const Program& p, OpKind kind) {
      return std::count_if(p.ops.begin(), p.ops.end(), [&](const Op& op) { return op.kind == kind; });
    };
    const Program& held = per_unit.programs[st];
    const Program& reduced = every.programs[st];
    EXPECT_EQ(count(reduced, OpKind::kReduceScatter), 4 * count(held, OpKind::kReduceScatter)) << st;
    EXPECT_EQ(count(reduced, OpKind::kAllGather), count(held, OpKind::kAllGather)) << st;
    // Each unsharded gradient buffer is freed before the next micro-batch's
    // backward of its unit allocates another: at most one per unit at a time.
    std::map<int, int> live, most;
    for (const Op& op : reduced.ops) {
      if (op.buffer < 0 || (op.kind != OpKind::kAlloc && op.kind != OpKind::kFree)) continue;
      const Buffer& b = reduced.buffers[static_cast<size_t>(op.buffer)];
      if (b.kind != BufferKind::kUnshardedGrads) continue;
      live[b.unit] += op.kind == OpKind::kAlloc ? 1 : -1;
      most[b.unit] = std::max(most[b.unit], live[b.unit]);
    }
    ASSERT_FALSE(most.empty()) << st;
    for (const auto& [unit, n] : most) EXPECT_EQ(n, 1) << "stage " << st << ", unit " << unit;
    EXPECT_TRUE(graph_problems(reduced).empty()) << st;
  }
}

// Only an FSDP strategy reduces its units' gradients itself; the split
// backward and the chunked loss are not modelled with it.
TEST(PipelineProgram, ReducingEveryMicroBatchIsRefusedWhereItIsNotModelled) {
  const std::string base = "mesh { pp: 2 } gradient_accumulation_steps: 4 ";
  for (const std::string& fields :
       {base + "strategy: MEGATRON_DDP pipeline { gradient_sync: EVERY_MICRO_BATCH_GRADIENT_SYNC }",
        base + "pipeline { schedule: ZERO_BUBBLE_H1 gradient_sync: EVERY_MICRO_BATCH_GRADIENT_SYNC }",
        base + "loss: CHUNKED pipeline { gradient_sync: EVERY_MICRO_BATCH_GRADIENT_SYNC }"}) {
    try {
      stages_of(fields);
      ADD_FAILURE() << "accepted: " << fields;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("training.pipeline.gradient_sync"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ragged::planner
