#include "sim/step_time_bound.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <tuple>

#include "planner/program_builder.hpp"

namespace ragged::sim {

using planner::Op;
using planner::OpKind;

namespace {

// The ops Executor::execute runs as kernels (its last branch): their time
// alone is ComputeModel::cost. Allocations, collectives and pipeline
// transfers take at least nothing.
bool runs_kernels(OpKind kind) {
  constexpr OpKind kNoKernels[] = {OpKind::kAlloc,     OpKind::kFree,     OpKind::kAllGather, OpKind::kReduceScatter,
                                   OpKind::kAllReduce, OpKind::kAllToAll, OpKind::kSend,      OpKind::kRecv};
  return std::find(std::begin(kNoKernels), std::end(kNoKernels), kind) == std::end(kNoKernels);
}

// The ops of every stage (node = first[stage] + op id) and, with the host
// path, each op's issue by its stage's host thread (node = ops + the op's
// node), as a graph whose edges say "cannot happen before". Each node holds
// two times: an op's earliest start and end; an issue's earliest time and
// the time its host thread is free again (the op's last kernel issued).
class ConstraintGraph {
 public:
  ConstraintGraph(const std::vector<planner::Program>& stages, bool host_path) : host_path_(host_path) {
    first_.push_back(0);
    for (const planner::Program& p : stages) first_.push_back(first_.back() + p.ops.size());
    ops_ = first_.back();
    const size_t nodes = host_path ? 2 * ops_ : ops_;
    successors_.resize(nodes);
    waiting_.assign(nodes, 0);
  }

  size_t op_node(size_t stage, size_t op) const { return first_[stage] + op; }
  size_t issue_node(size_t stage, size_t op) const { return ops_ + first_[stage] + op; }
  bool is_issue(size_t node) const { return node >= ops_; }
  size_t ops() const { return ops_; }
  size_t nodes() const { return successors_.size(); }

  void edge(size_t from, size_t to) {
    successors_[from].push_back(static_cast<uint32_t>(to));
    ++waiting_[to];
  }
  const std::vector<uint32_t>& successors(size_t node) const { return successors_[node]; }
  std::vector<uint32_t>& waiting() { return waiting_; }
  bool host_path() const { return host_path_; }

 private:
  bool host_path_;
  std::vector<size_t> first_;
  size_t ops_ = 0;
  std::vector<std::vector<uint32_t>> successors_;
  std::vector<uint32_t> waiting_;  // predecessors not yet placed
};

void add_stage_edges(ConstraintGraph& g, const std::vector<planner::Program>& stages, size_t s,
                     const std::map<std::tuple<int, int, int64_t>, size_t>& sends) {
  const planner::Program& program = stages[s];
  std::array<size_t, planner::kStreams> last_on_stream;
  last_on_stream.fill(SIZE_MAX);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const size_t node = g.op_node(s, i);
    for (uint32_t d : op.deps) g.edge(g.op_node(s, d), node);
    size_t& previous = last_on_stream[static_cast<size_t>(op.stream)];
    if (previous != SIZE_MAX) g.edge(previous, node);
    previous = node;
    if (op.kind == OpKind::kRecv) {
      const auto send = sends.find({op.peer, program.stage, op.message});
      if (send != sends.end()) g.edge(send->second, node);
    }
    if (!g.host_path()) continue;
    const size_t issue = g.issue_node(s, i);
    g.edge(issue, node);
    if (i > 0) g.edge(g.issue_node(s, i - 1), issue);
    for (uint32_t w : op.host.waits) g.edge(g.op_node(s, w), issue);
  }
}

// SimGrid ends a timed wait early when less than its timing precision
// (surf/precision, 1e-9 s by default; configure_engine keeps it) is left of
// it, and the engine's clock sums the times in another order than this
// bound: the bound gives up that precision per timed wait on its longest
// chain, and a billionth of itself for the rounding.
constexpr double kTimingPrecision = 1e-9;
constexpr double kRounding = 1e-9;

// The timed waits the executor runs for an op of this cost: the launch
// sleep, one per kernel, and the wait for its last kernel's issue.
double timed_waits(const OpCost& cost) {
  return static_cast<double>(2 + cost.persistent.size() + cost.sm_kernels.size() +
                             std::max<int64_t>(1, cost.memory_kernels));
}

}  // namespace

double step_time_lower_bound(const std::vector<planner::Program>& stages, const ComputeModel& compute,
                             const HostCosts& host) {
  ConstraintGraph g(stages, host.any());
  std::map<std::tuple<int, int, int64_t>, size_t> sends;  // (from stage, to stage, message) -> node
  for (size_t s = 0; s < stages.size(); ++s) {
    for (size_t i = 0; i < stages[s].ops.size(); ++i) {
      const Op& op = stages[s].ops[i];
      if (op.kind == OpKind::kSend) sends[{stages[s].stage, op.peer, op.message}] = g.op_node(s, i);
    }
  }
  for (size_t s = 0; s < stages.size(); ++s) add_stage_edges(g, stages, s, sends);

  // Which stage and op a node is.
  std::vector<std::pair<uint32_t, uint32_t>> where(g.ops());
  for (size_t s = 0; s < stages.size(); ++s) {
    for (size_t i = 0; i < stages[s].ops.size(); ++i)
      where[g.op_node(s, i)] = {static_cast<uint32_t>(s), static_cast<uint32_t>(i)};
  }
  std::vector<double> ready(g.nodes(), 0.0), early(g.nodes(), 0.0), late(g.nodes(), 0.0);
  std::vector<double> waits(g.nodes(), 0.0);  // timed waits on the longest chain of waits to a node's end
  std::vector<uint32_t>& waiting = g.waiting();
  std::vector<size_t> placeable;
  for (size_t n = 0; n < g.nodes(); ++n) {
    if (waiting[n] == 0) placeable.push_back(n);
  }
  size_t placed = 0;
  double step = 0, step_waits = 0;
  while (!placeable.empty()) {
    const size_t node = placeable.back();
    placeable.pop_back();
    ++placed;
    const bool issue = g.is_issue(node);
    const auto [s, i] = where[issue ? node - g.ops() : node];
    const Op& op = stages[s].ops[i];
    if (issue) {
      // Executor::run_host: the first kernel leaves after all but the later launches.
      const double seconds = host_seconds(op.host, host);
      const double later_launches =
          static_cast<double>(std::max<int64_t>(0, op.host.framework_ops - 1)) * host.framework_op_seconds;
      const double first = std::max(0.0, seconds - later_launches);
      early[node] = ready[node] + first;
      late[node] = early[node] + (seconds - first);
      waits[node] += 2;
    } else {
      double alone = 0;
      if (runs_kernels(op.kind)) {
        const OpCost cost = compute.cost(op);
        alone = cost.seconds();
        waits[node] += timed_waits(cost);
      }
      early[node] = ready[node];
      late[node] = early[node] + alone;
      // Executor::finish_after_issue: the last kernel runs after its issue.
      if (g.host_path() && runs_kernels(op.kind) && op.host.framework_ops > 1) {
        late[node] =
            std::max(late[node], late[g.issue_node(s, i)] + alone / static_cast<double>(op.host.framework_ops));
      }
      step = std::max(step, late[node]);
      step_waits = std::max(step_waits, waits[node]);
    }
    for (uint32_t next : g.successors(node)) {
      // An op waits for its issue (the issue's time), the host thread for
      // its previous issue's last launch; everything else for an op's end.
      const double at = issue && !g.is_issue(next) ? early[node] : late[node];
      ready[next] = std::max(ready[next], at);
      waits[next] = std::max(waits[next], waits[node]);
      if (--waiting[next] == 0) placeable.push_back(next);
    }
  }
  if (placed < g.nodes()) return 0.0;
  return std::max(0.0, step * (1 - kRounding) - step_waits * kTimingPrecision);
}

double step_time_lower_bound(const planner::ResolvedScenario& resolved, const planner::ScenarioPrograms& built,
                             const SimulationOptions& options) {
  const scenarios::Scenario& scenario = resolved.scenario();
  if (has_whatif(scenario)) return 0;
  // As simulate() chooses them.
  const HostCosts host = host_costs_of(scenario, options.host_issue);
  return step_time_lower_bound(built.programs, compute_model_of(scenario, options), host);
}

}  // namespace ragged::sim
