#include "sample_trace.hpp"

#include <unistd.h>

#include <atomic>
#include <string>

#include <gtest/gtest.h>

namespace ragged::traces::testing {
namespace {

struct OpSpec {
  uint64_t op_id;
  Stream stream;
  OpKind kind;
  int32_t unit;
  const char* name;
  int64_t start_ns;
  int64_t end_ns;
  int64_t bytes;
  double flops;
};

// One rank's step, in issue order.
constexpr OpSpec kOps[] = {
    {1, ALL_GATHER_STREAM, ALL_GATHER, 0, "layers.0 all_gather", 0, 1000, 4096, 0},
    {2, ALL_GATHER_STREAM, ALL_GATHER, 1, "layers.1 all_gather", 1000, 2500, 8192, 0},
    {3, COMPUTE, COMPUTE_FWD, 0, "layers.0 forward", 1000, 5000, 0, 1.5e9},
    {4, COMPUTE, COMPUTE_FWD, 1, "layers.1 forward", 5000, 9000, 0, 2.25e9},
    {5, COMPUTE, COMPUTE_BWD, 1, "layers.1 backward", 9000, 17000, 0, 4.5e9},
    {6, REDUCE_SCATTER_STREAM, REDUCE_SCATTER, 1, "layers.1 reduce_scatter", 17000, 19500, 8192, 0},
    {7, COMPUTE, COMPUTE_BWD, 0, "layers.0 backward", 17000, 25000, 0, 3e9},
    {8, REDUCE_SCATTER_STREAM, REDUCE_SCATTER, 0, "layers.0 reduce_scatter", 25000, 27000, 4096, 0},
    {9, COMPUTE, OPTIMIZER, -1, "adamw", 27000, 28000, 0, 1e6},
};

struct MemSpec {
  int64_t time_ns;
  int64_t allocated;
  int64_t reserved;
};

constexpr MemSpec kMemory[] = {
    {0, 1 << 20, 2 << 20}, {2500, 3 << 20, 4 << 20}, {17000, 5 << 20, 6 << 20}, {28000, 2 << 20, 6 << 20}};

constexpr int64_t kRankOffsetNs = 250;

}  // namespace

Trace make_sample_trace() {
  Trace trace;
  Metadata* metadata = trace.mutable_metadata();
  metadata->set_scenario_name("tiny-llama");
  metadata->set_scenario_text("model { name: \"tiny-llama\" }\ncluster {\n  gpus: 2\n}\n");
  metadata->set_source(PREDICTED);
  metadata->set_device("simgrid 3.32, 2 x H100");
  metadata->set_ragged_version("0.1.0");
  metadata->set_created_at("2024-05-01T12:00:00Z");
  metadata->set_strategy("ragged");
  metadata->set_world_size(2);
  metadata->add_traced_ranks(0);
  metadata->add_traced_ranks(1);
  metadata->set_steps(1);

  for (int32_t rank = 0; rank < 2; ++rank) {
    const int64_t offset = rank * kRankOffsetNs;
    for (const OpSpec& op : kOps) {
      Event* event = trace.add_events();
      event->set_op_id(op.op_id);
      event->set_rank(rank);
      event->set_stream(op.stream);
      event->set_kind(op.kind);
      event->set_unit(op.unit);
      if (!(rank == 1 && op.kind == OPTIMIZER)) event->set_name(op.name);
      event->set_start_ns(op.start_ns + offset);
      event->set_end_ns(op.end_ns + offset);
      event->set_bytes(op.bytes);
      event->set_flops(op.flops);
      event->set_step(0);
    }
    for (const MemSpec& mem : kMemory) {
      MemorySample* sample = trace.add_memory();
      sample->set_rank(rank);
      sample->set_time_ns(mem.time_ns + offset);
      sample->set_allocated_bytes(mem.allocated + rank);
      sample->set_reserved_bytes(mem.reserved);
    }
  }

  Summary* summary = trace.mutable_summary();
  summary->set_step_time_s(28.25e-6);
  summary->set_tokens_per_s_per_gpu(1.45e8);
  summary->set_mfu(0.41);
  summary->set_exposed_comm_s(1.0e-6);
  summary->set_peak_allocated_bytes((5 << 20) + 1);
  summary->set_peak_reserved_bytes(6 << 20);
  summary->set_compute_s(24.0e-6);
  summary->set_comm_s(7.0e-6);
  summary->set_tokens_per_step(4096);
  summary->set_hbm_capacity_bytes(80LL << 30);
  return trace;
}

ScratchDir::ScratchDir() {
  static std::atomic<int> counter{0};
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = test != nullptr ? test->name() : "none";
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  path_ = std::filesystem::temp_directory_path() /
          ("ragged_traces_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + name);
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

int ScratchDir::entry_count() const {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(path_)) ++count;
  return count;
}

}  // namespace ragged::traces::testing
