#pragma once
// A PyTorch profiler (Kineto) trace written in the format torch.profiler
// exports (Chrome trace events: user annotations, cuda_runtime launches and
// their kernels joined by args.correlation, "[memory]" instant events,
// deviceProperties and distributedInfo), for the tests that read one
// (tests/traces, and the dashboard's Compare in tests/gui). Schema-conformant
// traces built by the tests, not measured ones.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ragged::traces::testing {

// Events of one profiled program, in microseconds.
class KinetoWriter {
 public:
  void annotation(const std::string& name, double start, double end) {
    events_.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", name}, {"ts", start}, {"dur", end - start},
                       {"pid", 1}, {"tid", 1}});
  }
  // A kernel launched at `launch` (CPU) that ran [start, end) on the GPU.
  void kernel(const std::string& name, double launch, double start, double end) {
    const int id = ++correlation_;
    events_.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"ts", launch}, {"dur", 5},
                       {"pid", 1}, {"tid", 1}, {"args", {{"correlation", id}}}});
    events_.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"ts", start}, {"dur", end - start}, {"pid", 0},
                       {"tid", 7}, {"args", {{"correlation", id}, {"device", 0}}}});
  }
  void memory(double at, int64_t allocated, int64_t reserved) {
    events_.push_back({{"ph", "i"}, {"cat", "cpu_instant_event"}, {"name", "[memory]"}, {"ts", at}, {"pid", 1},
                       {"tid", 1}, {"s", "t"},
                       {"args", {{"Device Type", 1}, {"Device Id", 0}, {"Total Allocated", allocated},
                                 {"Total Reserved", reserved}, {"Bytes", 1024}}}});
  }
  // What a distributed run's trace states of it (0: a trace without distributedInfo).
  void set_world_size(int ranks) { world_size_ = ranks; }
  std::string text() const {
    nlohmann::json doc{{"schemaVersion", 1},
                       {"deviceProperties", nlohmann::json::array({{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}}})},
                       {"traceEvents", events_}};
    if (world_size_ > 0) doc["distributedInfo"] = {{"backend", "nccl"}, {"rank", 0}, {"world_size", world_size_}};
    return doc.dump();
  }

 private:
  nlohmann::json events_ = nlohmann::json::array();
  int correlation_ = 0;
  int world_size_ = 0;
};

}  // namespace ragged::traces::testing
