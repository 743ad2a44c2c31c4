#pragma once
// A PyTorch profiler (Kineto) trace of training steps, read as the measured
// Trace of the run a prediction describes, so that `ragged compare` and the
// dashboard's Compare tab put a real PyTorch run beside Ragged's prediction
// (docs/IMPORT.md, "A PyTorch profiler trace").
//
// What is read from the Chrome-trace JSON torch.profiler exports
// (`prof.export_chrome_trace`, `tensorboard_trace_handler`):
//  - steps: the "ProfilerStep#N" user annotations (their CPU spans) that
//    launched a GPU kernel;
//  - GPU kernels (cat "kernel") and the CUDA runtime launch each came from
//    (args.correlation), so a kernel belongs to the step and the FSDP
//    annotation its launch lay in;
//  - collectives: NCCL kernels (ncclDevKernel_* / ncclKernel_*), of the
//    kind of the collective called (all-gather, reduce-scatter, all-reduce,
//    all-to-all): the kernel's "Collective name", else the c10d annotation
//    ("nccl:all_reduce", ...) its launch lies in, else the kernel's name
//    (NCCL runs an all-to-all as SendRecv kernels, and so do some builds
//    every collective), matched in their order within a step to the
//    Program's collectives of that kind in op order;
//  - compute: FSDP2's annotations "FSDP::pre_forward (fqn)" ...
//    "FSDP::post_forward (fqn)" and "FSDP::pre_backward (fqn)" ...
//    "FSDP::post_backward (fqn)" bound a unit's forward and backward; the
//    kernels launched between them are that unit's compute op (matched to
//    the Program's unit whose name is the fqn or ends it: "layers.3" for
//    "model.layers.3"), its span from the first kernel's start to the last's end;
//  - memory: the "[memory]" events' "Total Allocated" and "Total Reserved";
//  - the run's GPU count: distributedInfo.world_size, so that a trace of
//    another world size is refused as another run (trace_comparability).
// What cannot be matched is counted and said, never guessed.

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces {

// True when `json` is a Chrome trace with the marks of torch.profiler
// (a "traceEvents" array and Kineto's "schemaVersion" or "deviceProperties",
// or kernel and CUDA runtime events), not a Ragged trace in JSON.
bool looks_like_kineto(std::string_view json);

struct KinetoImport {
  Trace trace;                        // MEASURED, the prediction's scenario and ranks
  int steps = 0;
  int kernels = 0;                    // GPU kernels read
  int collectives_matched = 0;        // NCCL kernels joined to a Program collective
  int collectives_unmatched = 0;
  std::map<OpKind, int> nccl_kernels;  // by the collective called; OP_KIND_UNSPECIFIED: broadcast, send/recv, ...
  int compute_matched = 0;            // FSDP-annotated compute spans joined to a Program compute op
  int compute_unmatched = 0;
  std::vector<std::string> notes;     // what was not matched, and why
};

// InputError naming the field when `json` is not such a trace (no steps, no
// kernels, malformed events); `origin` names the file in messages.
KinetoImport import_kineto(std::string_view json, const Trace& predicted, const std::string& origin);

// The measured trace at `path` for comparison with `predicted`: a Ragged
// trace (read_trace), or a PyTorch profiler trace read against it.
Trace read_measured_trace(const std::filesystem::path& path, const Trace& predicted);

}  // namespace ragged::traces
