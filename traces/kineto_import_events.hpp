#pragma once
// The events of a PyTorch profiler (Kineto) trace that kineto_import reads,
// as plain structs: the steps, FSDP and c10d annotations, GPU kernels with
// the CPU time of their launch, "[memory]" samples, and what the trace says
// about its run (device, world size). Internal to traces/.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces::kineto {

struct Interval {
  double start = 0;  // microseconds, the trace's clock
  double end = 0;
};

struct Kernel {
  std::string name;
  Interval gpu;
  double launch = -1;      // when the CPU launched it; -1: no launch event with its correlation id
  std::string collective;  // args "Collective name" (PyTorch 2.2 and later records it on NCCL kernels)
};

struct Annotation {
  std::string name;
  Interval cpu;
};

struct KinetoEvents {
  std::vector<Annotation> steps;  // "ProfilerStep#N", by start
  std::vector<Annotation> fsdp;   // FSDP2's "FSDP::..." and FSDP1's "FullyShardedDataParallel::...", by start
  std::vector<Annotation> c10d;   // "nccl:all_reduce", "nccl:_all_gather_base", ...: the collective called, by start
  std::vector<Kernel> kernels;    // by GPU start
  std::vector<std::pair<double, std::pair<int64_t, int64_t>>> memory;  // time, (allocated, reserved)
  std::string device;             // deviceProperties[0].name
  int64_t world_size = 0;         // distributedInfo.world_size; 0: not recorded
};

// InputError naming the field when `data` is not such a trace.
KinetoEvents parse_kineto(std::string_view data, const std::string& origin);

// The collective an NCCL (or RCCL) kernel ran, ALL_GATHER, REDUCE_SCATTER,
// ALL_REDUCE or ALL_TO_ALL; OP_KIND_UNSPECIFIED for another (broadcast,
// send/recv); nullopt for a kernel that is not NCCL's. Named by what was
// called rather than how NCCL ran it: the kernel's "Collective name", else
// the c10d annotation its launch lies in (NCCL runs an all-to-all, and some
// builds every collective, as "SendRecv" kernels), else the kernel's name.
std::optional<OpKind> collective_kind(const Kernel& kernel, const std::vector<Annotation>& c10d);

}  // namespace ragged::traces::kineto
