#pragma once
// Shared setup for the Program builder tests: a tiny inline Llama (embed, four
// blocks, head) on one node of eight H100, with the training block written per
// test, planned and built the way the commands do it; and walks over a
// Program in issue order (buffers live, dependencies followed).

#include <cstdint>
#include <string>
#include <vector>

#include "planner/layout_strategy.hpp"
#include "planner/optimizer_program.hpp"
#include "planner/plan.hpp"
#include "planner/program.hpp"
#include "planner/program_builder.hpp"
#include "planner/resolved_scenario.hpp"
#include "planner/scenario_plan.hpp"

namespace ragged::planner::program_test {

// Rank 0's Program for a shipped scenario under `strategy`, as the commands
// plan and build it; a pipelined scenario's first stage (the one holding the
// most micro-batches in flight).
inline Program shipped_program(const ResolvedScenario& resolved, scenarios::Strategy strategy) {
  scenarios::Training training = resolved.scenario().training();
  training.set_strategy(strategy);
  if (training.mesh().pp() > 1) {
    const PipelinePlan pipeline = plan_pipeline(resolved);
    const Plan plan = plan_model(resolved.model, resolved.granularity, training.shard_group_size(),
                                 *make_strategy(strategy), plan_options_for(training), pipeline.stages.units_of(0));
    const StageOfPipeline stage{&pipeline.stages, 0, pipeline.schedule};
    ProgramInputs inputs = program_inputs(resolved, plan);
    inputs.training = &training;
    inputs.pipeline = &stage;
    return build_program(inputs, 0);
  }
  const Plan plan =
      plan_model(resolved.model, resolved.granularity, training.shard_group_size(), *make_strategy(strategy));
  ProgramInputs inputs = program_inputs(resolved, plan);
  inputs.training = &training;
  return build_program(inputs, 0);
}

inline constexpr const char* kTinyLlama =
    "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 1024 intermediate_size: 704\n"
    "                      num_attention_heads: 8 num_key_value_heads: 4 } }\n"
    "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";

inline constexpr scenarios::Strategy kAllStrategies[] = {scenarios::RAGGED, scenarios::VESCALE_PAPER,
                                                         scenarios::FSDP1,  scenarios::FSDP2,
                                                         scenarios::ZERO3,  scenarios::MEGATRON};

// "training { <fields> }" appended to the tiny Llama (or another model and
// cluster), resolved and planned. Not copyable: the ProgramInputs of build()
// point into it.
class ProgramSetup {
 public:
  explicit ProgramSetup(const std::string& training_fields, const std::string& model_and_cluster = kTinyLlama)
      : resolved_(resolve_scenario(
            scenarios::parse_scenario(model_and_cluster + "training { " + training_fields + " }\n",
                                      scenarios::ScenarioFormat::kText, "program_test.textproto", RAGGED_SOURCE_DIR))),
        plan_(plan_model(resolved_.model, resolved_.granularity, training().shard_group_size(),
                         *make_strategy(training().strategy()))) {}
  ProgramSetup(const ProgramSetup&) = delete;
  ProgramSetup& operator=(const ProgramSetup&) = delete;

  const ResolvedScenario& resolved() const { return resolved_; }
  const models::ModelSpec& model() const { return resolved_.model; }
  const scenarios::Training& training() const { return resolved_.scenario().training(); }
  const Plan& plan() const { return plan_; }
  int units() const { return static_cast<int>(plan_.units.size()); }
  const models::UnitSpec& spec(int unit) const { return model().units[plan_.units[unit].unit_index]; }
  int64_t shard(int unit) const { return plan_.units[unit].layout.shard_size; }
  int64_t shard_total() const {
    int64_t total = 0;
    for (const UnitPlan& u : plan_.units) total += u.layout.shard_size;
    return total;
  }

  Program build(int rank = 0) const { return build_program(program_inputs(resolved_, plan_), rank); }
  // What the optimizer's ops of `rank` are planned from.
  OptimizerContext optimizer_context(int rank = 0) const {
    OptimizerContext c;
    c.model = &model();
    c.plan = &plan_;
    c.optimizer = training().optimizer();
    c.rank = rank;
    c.master_bytes = training().precision().master() == scenarios::FP32 ? 4 : 2;
    return c;
  }

 private:
  ResolvedScenario resolved_;
  Plan plan_;
};

inline std::string strategy_field(scenarios::Strategy strategy) {
  return "strategy: " + scenarios::Strategy_Name(strategy) + " ";
}

inline std::vector<const Op*> ops_of(const Program& program, OpKind kind) {
  std::vector<const Op*> out;
  for (const Op& op : program.ops) {
    if (op.kind == kind) out.push_back(&op);
  }
  return out;
}

// Whether `op` waits for `on` through its dependencies alone (transitively);
// with `stream_order`, also through the order of the ops on each stream,
// which every executor keeps: what is guaranteed to have finished first.
inline bool depends_on(const Program& program, uint32_t op, uint32_t on, bool stream_order = false) {
  std::vector<int64_t> previous_on_stream(program.ops.size(), -1);
  if (stream_order) {
    std::vector<int64_t> last(kStreams, -1);  // per stream
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const size_t s = static_cast<size_t>(program.ops[i].stream);
      previous_on_stream[i] = last[s];
      last[s] = static_cast<int64_t>(i);
    }
  }
  std::vector<bool> seen(program.ops.size(), false);
  std::vector<uint32_t> stack = {op};
  while (!stack.empty()) {
    const uint32_t id = stack.back();
    stack.pop_back();
    std::vector<uint32_t> before = program.ops[id].deps;
    if (previous_on_stream[id] >= 0) before.push_back(static_cast<uint32_t>(previous_on_stream[id]));
    for (uint32_t dep : before) {
      if (dep == on) return true;
      if (dep < seen.size() && !seen[dep]) {
        seen[dep] = true;
        stack.push_back(dep);
      }
    }
  }
  return false;
}

// Whether a buffer of `kind` and `unit` is live (allocated, not yet freed)
// just before each op, tracked in issue order.
class LiveBuffers {
 public:
  explicit LiveBuffers(const Program& program) : program_(program), state_(program.buffers.size(), 0) {}

  // Applies op `op` (an alloc or free changes the state; others do not).
  void apply(const Op& op) {
    if (op.buffer < 0 || static_cast<size_t>(op.buffer) >= state_.size()) return;
    if (op.kind == OpKind::kAlloc) state_[static_cast<size_t>(op.buffer)] = 1;
    if (op.kind == OpKind::kFree) state_[static_cast<size_t>(op.buffer)] = 2;
  }
  bool live(int buffer) const { return state_[static_cast<size_t>(buffer)] == 1; }
  int count(BufferKind kind, int unit) const {
    int n = 0;
    for (size_t b = 0; b < state_.size(); ++b) {
      n += state_[b] == 1 && program_.buffers[b].kind == kind && program_.buffers[b].unit == unit;
    }
    return n;
  }
  // Gathered parameter sets alive: all-gather outputs plus parameter copies.
  // Exact whenever no unit is between its copy-out's alloc and the free of
  // its all-gather output (e.g. right after an all-gather output's alloc).
  // Gathered parameters of the unit alive, counted once per gather: a
  // ZeRO-3 gather holds a buffer per fetch group (Buffer::tensors), counted
  // by its first group's (the one holding the unit's first fetched tensor).
  int gathered_sets(int unit) const {
    int first = -1;
    for (const Buffer& b : program_.buffers) {
      if (b.unit == unit && !b.tensors.empty() && (first < 0 || b.tensors.front() < first)) first = b.tensors.front();
    }
    int n = 0;
    for (size_t b = 0; b < state_.size(); ++b) {
      const Buffer& buffer = program_.buffers[b];
      const bool params = buffer.kind == BufferKind::kUnshardedParams || buffer.kind == BufferKind::kParamCopies;
      const bool first_group = buffer.tensors.empty() || buffer.tensors.front() == first;
      if (params && buffer.unit == unit && state_[b] == 1 && first_group) ++n;
    }
    return n;
  }

 private:
  const Program& program_;
  std::vector<int> state_;  // 0 not yet allocated, 1 live, 2 freed
};

// Every way `program` breaks the contract of DESIGN.md ("The Program is the
// contract between the executors"): ids, dependency order, buffer lifetimes,
// and compute ops running on live parameters, activations and gradients.
inline std::vector<std::string> graph_problems(const Program& program) {
  std::vector<std::string> problems;
  const auto fail = [&](const Op& op, const std::string& what) {
    problems.push_back("op " + std::to_string(op.id) + " '" + op.name + "': " + what);
  };
  std::vector<int> allocs(program.buffers.size(), 0), frees(program.buffers.size(), 0);
  LiveBuffers live(program);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (op.id != i) fail(op, "id is not its index " + std::to_string(i));
    for (uint32_t dep : op.deps) {
      if (dep >= op.id) fail(op, "depends on op " + std::to_string(dep) + ", not issued before it");
    }
    if (op.buffer >= static_cast<int>(program.buffers.size())) fail(op, "buffer index out of range");
    if (op.kind == OpKind::kAlloc || op.kind == OpKind::kFree) {
      if (op.buffer < 0) {
        fail(op, "alloc/free without a buffer");
        continue;
      }
      const size_t b = static_cast<size_t>(op.buffer);
      if (op.kind == OpKind::kAlloc && (allocs[b]++ > 0 || frees[b] > 0))
        fail(op, "buffer allocated again or after its free");
      if (op.kind == OpKind::kFree && (frees[b]++ > 0 || allocs[b] == 0))
        fail(op, "buffer freed again or before its alloc");
      if (op.bytes != program.buffers[b].bytes) fail(op, "alloc/free bytes differ from the buffer's");
    } else if (op.buffer >= 0 && !live.live(op.buffer)) {
      fail(op, "uses buffer '" + program.buffers[static_cast<size_t>(op.buffer)].name + "' outside its lifetime");
    }
    const bool compute =
        op.kind == OpKind::kComputeFwd || op.kind == OpKind::kComputeBwd || op.kind == OpKind::kRecompute;
    // DDP computes with the module's own parameters (an autocast copy only
    // below the master dtype) and autograd may write straight into .grad.
    // Megatron's DDP holds its parameters and gradients in persistent buffers.
    const bool ddp = program.strategy == "ddp" || program.strategy == "megatron-ddp";
    if (compute && op.unit >= 0) {
      if (!ddp && live.gathered_sets(op.unit) == 0) fail(op, "computes without the unit's gathered parameters");
      if (live.count(BufferKind::kActivations, op.unit) == 0) fail(op, "computes without the unit's activations");
      // Without optimizer steps the gradients are persistent memory.
      if (op.kind == OpKind::kComputeBwd && !op.loss_only && live.count(BufferKind::kUnshardedGrads, op.unit) == 0 &&
          !(ddp && live.count(BufferKind::kGradShards, op.unit) > 0) && program.strategy != "megatron-ddp" &&
          program.optimizer_steps) {
        fail(op, "backward without the unit's gradient buffer");
      }
    }
    live.apply(op);
  }
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    if (allocs[b] != 1 || frees[b] != 1) {
      problems.push_back("buffer '" + program.buffers[b].name + "' allocated " + std::to_string(allocs[b]) +
                         " and freed " + std::to_string(frees[b]) + " times");
    }
  }
  return problems;
}

inline std::string joined(const std::vector<std::string>& lines, size_t at_most = 10) {
  std::string out;
  for (size_t i = 0; i < lines.size() && i < at_most; ++i) out += lines[i] + "\n";
  if (lines.size() > at_most) out += "... " + std::to_string(lines.size() - at_most) + " more\n";
  return out;
}

inline double gemm_flops(const ComputeWork& work) {
  double total = 0;
  for (const Gemm& g : work.gemms) total += g.flops();
  return total;
}

// The op of `kind` for (unit, micro_batch); fails the test unless there is
// exactly one. The head's backward is its GEMMs' (its loss's, loss_only, aside).
inline const Op& only_op(const Program& program, OpKind kind, int unit, int micro_batch) {
  const Op* found = nullptr;
  int n = 0;
  for (const Op& op : program.ops) {
    if (op.kind == kind && op.unit == unit && op.micro_batch == micro_batch && !op.loss_only) {
      found = &op;
      ++n;
    }
  }
  EXPECT_EQ(n, 1) << op_kind_name(kind) << " of unit " << unit << " micro-batch " << micro_batch;
  static const Op kNone;
  return found ? *found : kNone;
}


}  // namespace ragged::planner::program_test
