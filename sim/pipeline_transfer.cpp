// CollectiveEngine::transfer: the sends and receives between pipeline
// stages (docs/SIMULATOR.md, "Pipeline stages").

#include <algorithm>
#include <mutex>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "common/errors.hpp"
#include "sim/collective_engine.hpp"

namespace ragged::sim {

namespace sg4 = simgrid::s4u;

double CollectiveEngine::transfer(const planner::Op& op, int rank) {
  RAGGED_ASSERT(op.kind == planner::OpKind::kSend || op.kind == planner::OpKind::kRecv, "transfer of a send or receive");
  if (op.bytes <= 0) return 0;
  const double start = sg4::Engine::get_clock();
  const planner::GroupSpan span = planner::group_span(mesh_, planner::Group::kPipeline);
  const int64_t gpu = participants_.gpus[static_cast<size_t>(rank)];
  const int64_t stage = gpu / span.stride % span.members;
  const int64_t peer_gpu = gpu + (op.peer - stage) * span.stride;
  const auto found = std::find(participants_.gpus.begin(), participants_.gpus.end(), peer_gpu);
  RAGGED_ASSERT(found != participants_.gpus.end(),
                fmt::format("the pipeline peer of GPU {} (GPU {}, stage {}) is simulated", gpu, peer_gpu, op.peer));
  const int peer = static_cast<int>(found - participants_.gpus.begin());
  Transfer& t = transfers_[op.message];
  if (++t.arrived < 2) {
    std::unique_lock lock(*mutex_);
    changed_->wait(lock, [&t] { return t.done; });
    transfers_.erase(op.message);
  } else {
    const bool sending = op.kind == planner::OpKind::kSend;
    run_transfer(op, sending ? rank : peer, sending ? peer : rank);
    std::unique_lock lock(*mutex_);
    t.done = true;
    changed_->notify_all();
  }
  return sg4::Engine::get_clock() - start;
}

// One flow: over NVLink inside a node; across nodes, through both nodes'
// network ports, carrying what every GPU of the sending node sends to the
// receiving node at once (each stage's ranks send their shares together, and
// only one of them is simulated). NCCL's latency is a two-rank ring's.
double CollectiveEngine::run_transfer(const planner::Op& op, int sender, int receiver) {
  const int64_t per_node = cluster_.gpus_per_node;
  const int64_t from = participants_.gpus[static_cast<size_t>(sender)];
  const int64_t to = participants_.gpus[static_cast<size_t>(receiver)];
  const int64_t from_node = from / per_node, to_node = to / per_node;
  Flow flow;
  double bytes = static_cast<double>(op.bytes);
  if (from_node == to_node) {
    flow = {{from_node, static_cast<int>(from % per_node)}, {to_node, static_cast<int>(to % per_node)}, 1.0};
  } else {
    int64_t alongside = 0;  // GPUs of the sending node whose peers are on the receiving node
    for (int64_t g = from_node * per_node; g < (from_node + 1) * per_node; ++g) {
      alongside += (g + to - from) / per_node == to_node ? 1 : 0;
    }
    flow = {{from_node, -1}, {to_node, -1}, 1.0};
    bytes *= static_cast<double>(alongside);
  }
  const double begin = sg4::Engine::get_clock();
  sg4::Comm::sendto(platform_.host(flow.src), platform_.host(flow.dst), static_cast<uint64_t>(bytes));
  ++flows_started_;
  const double bandwidth = sg4::Engine::get_clock() - begin;
  const RingShape pair{2, from_node == to_node ? 1 : 2, false};
  sg4::this_actor::sleep_for(std::max(0.0, best_collective_time(pair, bandwidth).seconds - bandwidth));
  return sg4::Engine::get_clock() - begin;
}

}  // namespace ragged::sim
