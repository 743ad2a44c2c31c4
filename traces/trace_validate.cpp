#include "traces/trace_validate.hpp"

#include <cmath>
#include <cstdint>
#include <unordered_set>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::traces {
namespace {

// Collects problems under a field path prefix ("events[3]").
class Problems {
 public:
  explicit Problems(std::vector<std::string>* out) : out_(out) {}

  void add(std::string problem) { out_->push_back(std::move(problem)); }

  void non_negative(const std::string& path, int64_t value) {
    if (value < 0) add(fmt::format("{} ({}) is negative", path, value));
  }

  void finite_non_negative(const std::string& path, double value) {
    if (!std::isfinite(value)) {
      add(fmt::format("{} ({}) is not a finite number", path, value));
    } else if (value < 0) {
      add(fmt::format("{} ({}) is negative", path, value));
    }
  }

 private:
  std::vector<std::string>* out_;
};

// Which ranks may appear in events and memory samples.
class RankSet {
 public:
  explicit RankSet(const Metadata& metadata)
      : world_size_(metadata.world_size()),
        traced_(metadata.traced_ranks().begin(), metadata.traced_ranks().end()) {}

  void check(Problems& problems, const std::string& path, int32_t rank) const {
    if (rank < 0) {
      problems.add(fmt::format("{} ({}) is negative", path, rank));
    } else if (world_size_ >= 1 && rank >= world_size_) {
      problems.add(fmt::format("{} ({}) is not below metadata.world_size ({})", path, rank, world_size_));
    } else if (!traced_.empty() && !traced_.contains(rank)) {
      problems.add(fmt::format("{} ({}) is not listed in metadata.traced_ranks", path, rank));
    }
  }

 private:
  int32_t world_size_;
  std::unordered_set<int32_t> traced_;
};

void check_metadata(Problems& problems, const Metadata& metadata) {
  if (metadata.source() == SOURCE_UNSPECIFIED) {
    problems.add("metadata.source is SOURCE_UNSPECIFIED: set PREDICTED or MEASURED");
  } else if (!Source_IsValid(metadata.source())) {
    problems.add(fmt::format("metadata.source ({}) is not a known Source", static_cast<int>(metadata.source())));
  }
  if (metadata.world_size() < 1) {
    problems.add(fmt::format("metadata.world_size ({}) is less than 1", metadata.world_size()));
  }
  problems.non_negative("metadata.steps", metadata.steps());
  std::unordered_set<int32_t> seen;
  for (int i = 0; i < metadata.traced_ranks_size(); ++i) {
    int32_t rank = metadata.traced_ranks(i);
    auto path = fmt::format("metadata.traced_ranks[{}]", i);
    if (rank < 0) {
      problems.add(fmt::format("{} ({}) is negative", path, rank));
    } else if (metadata.world_size() >= 1 && rank >= metadata.world_size()) {
      problems.add(fmt::format("{} ({}) is not below metadata.world_size ({})", path, rank,
                               metadata.world_size()));
    }
    if (!seen.insert(rank).second) problems.add(fmt::format("{} ({}) is listed twice", path, rank));
  }
}

void check_event(Problems& problems, const RankSet& ranks, const Event& event, int index) {
  auto path = fmt::format("events[{}]", index);
  ranks.check(problems, path + ".rank", event.rank());
  if (event.kind() == OP_KIND_UNSPECIFIED) {
    problems.add(path + ".kind is OP_KIND_UNSPECIFIED");
  } else if (!OpKind_IsValid(event.kind())) {
    problems.add(fmt::format("{}.kind ({}) is not a known OpKind", path, static_cast<int>(event.kind())));
  }
  if (event.stream() == STREAM_UNSPECIFIED) {
    problems.add(path + ".stream is STREAM_UNSPECIFIED");
  } else if (!Stream_IsValid(event.stream())) {
    problems.add(fmt::format("{}.stream ({}) is not a known Stream", path, static_cast<int>(event.stream())));
  }
  if (event.unit() < -1) {
    problems.add(fmt::format("{}.unit ({}) is below -1 (the value for no unit)", path, event.unit()));
  }
  problems.non_negative(path + ".start_ns", event.start_ns());
  problems.non_negative(path + ".end_ns", event.end_ns());
  if (event.end_ns() < event.start_ns()) {
    problems.add(fmt::format("{}.end_ns ({}) is before start_ns ({})", path, event.end_ns(), event.start_ns()));
  }
  problems.non_negative(path + ".bytes", event.bytes());
  problems.finite_non_negative(path + ".flops", event.flops());
  problems.non_negative(path + ".step", event.step());
}

void check_memory(Problems& problems, const RankSet& ranks, const MemorySample& sample, int index) {
  auto path = fmt::format("memory[{}]", index);
  ranks.check(problems, path + ".rank", sample.rank());
  problems.non_negative(path + ".time_ns", sample.time_ns());
  problems.non_negative(path + ".allocated_bytes", sample.allocated_bytes());
  problems.non_negative(path + ".reserved_bytes", sample.reserved_bytes());
  problems.non_negative(path + ".state_and_buffers_bytes", sample.state_and_buffers_bytes());
  if (sample.allocated_bytes() > sample.reserved_bytes()) {
    problems.add(fmt::format("{}.allocated_bytes ({}) exceeds reserved_bytes ({})", path,
                             sample.allocated_bytes(), sample.reserved_bytes()));
  }
}

void check_summary(Problems& problems, const Summary& summary) {
  problems.finite_non_negative("summary.step_time_s", summary.step_time_s());
  problems.finite_non_negative("summary.tokens_per_s_per_gpu", summary.tokens_per_s_per_gpu());
  problems.finite_non_negative("summary.mfu", summary.mfu());
  problems.finite_non_negative("summary.exposed_comm_s", summary.exposed_comm_s());
  problems.finite_non_negative("summary.compute_s", summary.compute_s());
  problems.finite_non_negative("summary.comm_s", summary.comm_s());
  problems.non_negative("summary.peak_allocated_bytes", summary.peak_allocated_bytes());
  problems.non_negative("summary.peak_reserved_bytes", summary.peak_reserved_bytes());
  problems.non_negative("summary.tokens_per_step", summary.tokens_per_step());
  problems.non_negative("summary.hbm_capacity_bytes", summary.hbm_capacity_bytes());
  problems.non_negative("summary.allocator_capacity_bytes", summary.allocator_capacity_bytes());
  if (summary.allocator_capacity_bytes() > summary.hbm_capacity_bytes()) {
    problems.add(fmt::format("summary.allocator_capacity_bytes ({}) exceeds summary.hbm_capacity_bytes ({}): the "
                             "allocator's capacity is the HBM less the CUDA context and NCCL",
                             summary.allocator_capacity_bytes(), summary.hbm_capacity_bytes()));
  }
}

void check_stages(Problems& problems, const Summary& summary) {
  for (int i = 0; i < summary.stages_size(); ++i) {
    const StageFigures& stage = summary.stages(i);
    const std::string path = fmt::format("summary.stages[{}]", i);
    problems.non_negative(path + ".stage", stage.stage());
    problems.non_negative(path + ".rank", stage.rank());
    problems.finite_non_negative(path + ".compute_s", stage.compute_s());
    problems.finite_non_negative(path + ".pipeline_wait_s", stage.pipeline_wait_s());
    problems.finite_non_negative(path + ".end_s", stage.end_s());
    problems.non_negative(path + ".peak_reserved_bytes", stage.peak_reserved_bytes());
  }
}

// The readers sum durations in 64-bit nanoseconds (per op, per stream):
// every such sum is at most the sum over all events, checked here.
void check_duration_sum(Problems& problems, const Trace& trace) {
  int64_t total = 0;
  bool overflow = false;
  for (const Event& e : trace.events()) {
    // end >= start >= 0 is checked per event; a negative start could overflow the difference itself.
    if (e.start_ns() < 0 || e.end_ns() <= e.start_ns()) continue;
    overflow = overflow || __builtin_add_overflow(total, e.end_ns() - e.start_ns(), &total);
  }
  if (overflow) {
    problems.add(fmt::format("the events' durations sum past {} ns (292 years): a start_ns or end_ns is wrong",
                             INT64_MAX));
  }
}

}  // namespace

std::vector<std::string> trace_problems(const Trace& trace) {
  std::vector<std::string> out;
  Problems problems(&out);
  check_metadata(problems, trace.metadata());
  RankSet ranks(trace.metadata());
  for (int i = 0; i < trace.events_size(); ++i) check_event(problems, ranks, trace.events(i), i);
  for (int i = 0; i < trace.memory_size(); ++i) check_memory(problems, ranks, trace.memory(i), i);
  check_summary(problems, trace.summary());
  check_stages(problems, trace.summary());
  check_duration_sum(problems, trace);
  return out;
}

void check_trace(const Trace& trace, const std::string& origin) {
  std::vector<std::string> problems = trace_problems(trace);
  if (problems.empty()) return;
  std::string message = fmt::format("{}: {}", origin, problems.front());
  if (problems.size() > 1) message += fmt::format(" ({} more)", problems.size() - 1);
  throw InputError(message);
}

}  // namespace ragged::traces
