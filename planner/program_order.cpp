#include "planner/program_order.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace ragged::planner {

HappensBefore::HappensBefore(const Program& program)
    : position_(program.ops.size()), stream_(program.ops.size()), clock_(program.ops.size()) {
  std::array<int64_t, kStreams> next{};  // ops issued so far per stream
  std::array<int64_t, kStreams> last{};  // the previous op of each stream
  last.fill(-1);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const size_t s = static_cast<size_t>(op.stream);
    RAGGED_ASSERT(s < kStreams, "an op on an unknown stream");
    std::array<int64_t, kStreams> clock;
    clock.fill(-1);
    const auto join = [&](size_t d) {
      for (size_t t = 0; t < kStreams; ++t) clock[t] = std::max(clock[t], clock_[d][t]);
      clock[stream_[d]] = std::max(clock[stream_[d]], position_[d]);
    };
    if (last[s] >= 0) join(static_cast<size_t>(last[s]));
    for (uint32_t d : op.deps) {
      RAGGED_ASSERT(d < i, "a dependency must be issued before the op that waits for it");
      join(d);
    }
    position_[i] = next[s]++;
    stream_[i] = static_cast<uint8_t>(s);
    clock_[i] = clock;
    last[s] = static_cast<int64_t>(i);
  }
}

bool HappensBefore::before(uint32_t a, uint32_t b) const { return clock_[b][stream_[a]] >= position_[a]; }

std::vector<uint32_t> reductions_last_order(const Program& program) {
  // The mesh's streams run with the compute they sit in.
  constexpr std::array<Stream, kStreams> kPriority = {
      Stream::kAllGather,      Stream::kCompute,      Stream::kTensorParallel, Stream::kContextParallel,
      Stream::kExpertParallel, Stream::kPipelineRecv, Stream::kPipelineSend,   Stream::kAllReduce,
      Stream::kReduceScatter};
  std::array<std::vector<uint32_t>, kStreams> queue;  // each stream's ops, in issue order
  for (const Op& op : program.ops) queue[static_cast<size_t>(op.stream)].push_back(op.id);
  std::array<size_t, kStreams> head{};
  std::vector<bool> done(program.ops.size(), false);
  std::vector<uint32_t> order;
  order.reserve(program.ops.size());
  while (order.size() < program.ops.size()) {
    bool ran = false;
    for (Stream stream : kPriority) {
      const size_t s = static_cast<size_t>(stream);
      if (head[s] == queue[s].size()) continue;
      const Op& op = program.ops[queue[s][head[s]]];
      if (!std::all_of(op.deps.begin(), op.deps.end(), [&](uint32_t d) { return done[d]; })) continue;
      done[op.id] = true;
      order.push_back(op.id);
      ++head[s];
      ran = true;
      break;  // back to the stream of highest priority
    }
    // Issue order is an execution, so the earliest unfinished op can always run.
    RAGGED_ASSERT(ran, "the Program's dependencies form a cycle");
  }
  return order;
}

}  // namespace ragged::planner
