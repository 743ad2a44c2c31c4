#include "traces/kineto_import.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "traces/kineto_import_events.hpp"
#include "traces/trace_io.hpp"
#include "traces/trace_names.hpp"
#include "traces/trace_validate.hpp"

namespace ragged::traces {
namespace {

using kineto::Annotation;
using kineto::Interval;
using kineto::Kernel;

// The steps that trained: a "ProfilerStep#N" that launched no GPU kernel
// (the last one when the loop ends before the profiler stops, the steps of
// a CPU-only trace) is left out, with a note.
std::vector<Annotation> training_steps(const kineto::KinetoEvents& parsed, std::vector<std::string>& notes) {
  std::vector<Annotation> out;
  std::vector<std::string> idle;
  for (const Annotation& step : parsed.steps) {
    const bool launched = std::any_of(parsed.kernels.begin(), parsed.kernels.end(), [&](const Kernel& k) {
      return k.launch >= step.cpu.start && k.launch < step.cpu.end;
    });
    if (launched) out.push_back(step);
    else idle.push_back(step.name);
  }
  if (!idle.empty()) {
    notes.push_back(fmt::format("left out, no GPU kernel launched in them: {}", fmt::join(idle, ", ")));
  }
  const auto unlaunched = std::count_if(parsed.kernels.begin(), parsed.kernels.end(), [](const Kernel& k) { return k.launch < 0; });
  if (unlaunched > 0) {
    notes.push_back(fmt::format("{} kernels without a launch event (args.correlation) are in no step", unlaunched));
  }
  return out;
}

// Busy time: the union of the intervals.
double busy_us(std::vector<Interval> spans) {
  std::sort(spans.begin(), spans.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  double total = 0, end = -1e300;
  for (const Interval& s : spans) {
    if (s.end <= end) continue;
    total += s.end - std::max(s.start, end);
    end = s.end;
  }
  return total;
}

// The prediction's ops of its first traced rank and first step, by kind and
// by (unit, forward/backward), in op order.
struct ProgramOps {
  std::map<OpKind, std::vector<const Event*>> collectives;
  std::map<std::pair<int, bool>, std::vector<const Event*>> compute;  // (unit, backward)
  std::map<int, std::string> unit_names;
};

ProgramOps program_ops(const Trace& predicted) {
  ProgramOps ops;
  const int rank = predicted.metadata().traced_ranks_size() ? predicted.metadata().traced_ranks(0) : 0;
  int first_step = -1;
  for (const Event& e : predicted.events()) {
    if (e.rank() == rank && (first_step < 0 || e.step() < first_step)) first_step = e.step();
  }
  std::vector<const Event*> events;
  for (const Event& e : predicted.events()) {
    if (e.rank() == rank && e.step() == first_step) events.push_back(&e);
  }
  std::sort(events.begin(), events.end(), [](const Event* a, const Event* b) { return a->op_id() < b->op_id(); });
  for (const Event* e : events) {
    // A unit is named by its compute ops ("layers.3 forward"): `ragged simulate` issues its buffers'
    // allocations first, and "alloc layers.3 unsharded params" names no unit.
    const bool compute = e->kind() == COMPUTE_FWD || e->kind() == COMPUTE_BWD;
    if (compute && e->unit() >= 0 && !ops.unit_names.contains(e->unit())) {
      ops.unit_names[e->unit()] = e->name().substr(0, e->name().find(' '));
    }
    switch (e->kind()) {
      case ALL_GATHER:
      case REDUCE_SCATTER:
      case ALL_REDUCE:
      case ALL_TO_ALL: ops.collectives[e->kind()].push_back(e); break;
      case COMPUTE_FWD:
      case COMPUTE_BWD: ops.compute[{e->unit(), e->kind() == COMPUTE_BWD}].push_back(e); break;
      default: break;
    }
  }
  return ops;
}

// The Program unit an FSDP module's fully qualified name is: the same name,
// or the name its fqn ends with ("model.layers.3" is "layers.3").
std::optional<int> unit_of(const ProgramOps& ops, const std::string& fqn) {
  for (const auto& [unit, name] : ops.unit_names) {
    if (fqn == name || (fqn.size() > name.size() && fqn.ends_with("." + name))) return unit;
  }
  return std::nullopt;
}

// "FSDP::pre_forward (layers.3)" -> ("pre_forward", "layers.3").
std::pair<std::string, std::string> fsdp_phase(const std::string& name) {
  const size_t colons = name.find("::");
  const size_t open = name.find(" (", colons);
  if (open == std::string::npos || !name.ends_with(")")) return {name.substr(colons + 2), ""};
  return {name.substr(colons + 2, open - colons - 2), name.substr(open + 2, name.size() - open - 3)};
}

// Each FSDP unit's forward and backward windows in a step, in time order:
// from the end of its pre_ hook to the start of its post_ hook.
struct Window {
  std::string fqn;
  bool backward = false;
  Interval cpu;
};

std::vector<Window> fsdp_windows(const std::vector<Annotation>& fsdp, const Interval& step) {
  std::vector<Window> out;
  std::map<std::pair<std::string, bool>, std::vector<double>> open;  // (fqn, backward) -> pre hooks' ends
  for (const Annotation& a : fsdp) {
    if (a.cpu.start < step.start || a.cpu.start >= step.end) continue;
    const auto [phase, fqn] = fsdp_phase(a.name);
    if (fqn.empty()) continue;
    const bool backward = phase.find("backward") != std::string::npos;
    if (phase == "pre_forward" || phase == "pre_backward") {
      open[{fqn, backward}].push_back(a.cpu.end);
    } else if ((phase == "post_forward" || phase == "post_backward") && !open[{fqn, backward}].empty()) {
      std::vector<double>& starts = open[{fqn, backward}];
      out.push_back({fqn, backward, {starts.front(), a.cpu.start}});
      starts.erase(starts.begin());
    }
  }
  std::sort(out.begin(), out.end(), [](const Window& a, const Window& b) { return a.cpu.start < b.cpu.start; });
  return out;
}

Event measured_event(const Event& op, int step, Interval gpu, double origin_us) {
  Event e;
  e.set_op_id(op.op_id());
  e.set_rank(op.rank());
  e.set_stream(op.stream());
  e.set_kind(op.kind());
  e.set_unit(op.unit());
  e.set_name(op.name());
  e.set_bytes(op.bytes());
  e.set_flops(op.flops());
  e.set_step(step);
  e.set_start_ns(std::llround((gpu.start - origin_us) * 1e3));
  e.set_end_ns(std::llround((gpu.end - origin_us) * 1e3));
  return e;
}

}  // namespace

Trace read_measured_trace(const std::filesystem::path& path, const Trace& predicted) {
  const std::string data = read_file(path, kMaxTraceBytes);
  if (data.starts_with("\x1f\x8b")) {  // gzip's magic bytes: tensorboard_trace_handler(use_gzip=True) writes .json.gz
    throw InputError(fmt::format("{}: gzip-compressed; decompress it first (gunzip -k {})", path.string(), path.string()));
  }
  Trace trace = looks_like_kineto(data) ? import_kineto(data, predicted, path.string()).trace
                                        : parse_trace(data, format_for_path(path), path.string());
  check_trace(trace, path.string());
  return trace;
}

bool looks_like_kineto(std::string_view data) {
  const std::string_view head = data.substr(0, 1 << 20);
  if (head.find("\"traceEvents\"") == std::string_view::npos) return false;
  return head.find("\"schemaVersion\"") != std::string_view::npos ||
         head.find("\"deviceProperties\"") != std::string_view::npos ||
         head.find("\"cuda_runtime\"") != std::string_view::npos || head.find("\"ProfilerStep#") != std::string_view::npos;
}

KinetoImport import_kineto(std::string_view data, const Trace& predicted, const std::string& origin) {
  if (predicted.metadata().source() != PREDICTED) {
    throw InputError("a PyTorch profiler trace is read against a prediction: give `ragged simulate --trace`'s first");
  }
  const kineto::KinetoEvents parsed = kineto::parse_kineto(data, origin);
  const ProgramOps ops = program_ops(predicted);
  KinetoImport out;
  out.kernels = static_cast<int>(parsed.kernels.size());
  const std::vector<Annotation> steps = training_steps(parsed, out.notes);
  if (steps.empty()) {
    throw InputError(fmt::format("{}: no \"ProfilerStep#N\" launched a GPU kernel: profile steps of training on the "
                                 "GPU (activities including ProfilerActivity.CUDA, the schedule's active steps)",
                                 origin));
  }
  out.steps = static_cast<int>(steps.size());
  Trace& trace = out.trace;
  *trace.mutable_metadata() = predicted.metadata();
  trace.mutable_metadata()->set_source(MEASURED);
  trace.mutable_metadata()->set_device(parsed.device.empty() ? "PyTorch profiler trace" : parsed.device);
  trace.mutable_metadata()->set_steps(out.steps);
  trace.mutable_metadata()->clear_executor_notes();
  // The one fact about its run a profiler trace states: a different GPU count makes another run.
  if (parsed.world_size > 0) trace.mutable_metadata()->set_world_size(static_cast<int32_t>(parsed.world_size));
  const double origin_us = steps.front().cpu.start;
  std::vector<double> step_s, compute_s, comm_s;
  for (size_t s = 0; s < steps.size(); ++s) {
    const Interval window = steps[s].cpu;
    const int step = static_cast<int>(s) + 1;
    std::vector<Interval> compute, comm;
    std::map<OpKind, size_t> next;  // per kind: the next Program collective to match
    std::vector<const Kernel*> compute_kernels;  // the step's kernels that are not NCCL's
    for (const Kernel& k : parsed.kernels) {
      if (k.launch < window.start || k.launch >= window.end) continue;
      const std::optional<OpKind> kind = kineto::collective_kind(k, parsed.c10d);
      (kind ? comm : compute).push_back(k.gpu);
      if (!kind) {
        compute_kernels.push_back(&k);
        continue;
      }
      ++out.nccl_kernels[*kind];
      const auto it = ops.collectives.find(*kind);
      size_t& n = next[*kind];
      if (it == ops.collectives.end() || n >= it->second.size()) {
        ++out.collectives_unmatched;
        continue;
      }
      *trace.add_events() = measured_event(*it->second[n++], step, k.gpu, origin_us);
      ++out.collectives_matched;
    }
    std::map<std::pair<int, bool>, size_t> used;
    for (const Window& w : fsdp_windows(parsed.fsdp, window)) {
      Interval span{1e300, -1e300};
      for (const Kernel* k : compute_kernels) {
        if (k->launch < w.cpu.start || k->launch >= w.cpu.end) continue;
        span = {std::min(span.start, k->gpu.start), std::max(span.end, k->gpu.end)};
      }
      const std::optional<int> unit = unit_of(ops, w.fqn);
      const auto it = unit ? ops.compute.find({*unit, w.backward}) : ops.compute.end();
      if (span.end < span.start || it == ops.compute.end() || used[{*unit, w.backward}] >= it->second.size()) {
        ++out.compute_unmatched;
        continue;
      }
      *trace.add_events() = measured_event(*it->second[used[{*unit, w.backward}]++], step, span, origin_us);
      ++out.compute_matched;
    }
    StepFigures* figures = trace.mutable_summary()->add_per_step();
    figures->set_step_time_s((window.end - window.start) * 1e-6);
    figures->set_compute_s(busy_us(compute) * 1e-6);
    figures->set_comm_s(busy_us(comm) * 1e-6);
    figures->set_exposed_comm_s(std::max(0.0, figures->step_time_s() - figures->compute_s()));
    step_s.push_back(figures->step_time_s());
    compute_s.push_back(figures->compute_s());
    comm_s.push_back(figures->comm_s());
  }
  const auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };
  Summary& summary = *trace.mutable_summary();
  summary.set_step_time_s(mean(step_s));
  summary.set_compute_s(mean(compute_s));
  summary.set_comm_s(mean(comm_s));
  summary.set_exposed_comm_s(std::max(0.0, summary.step_time_s() - summary.compute_s()));
  summary.set_tokens_per_step(predicted.summary().tokens_per_step());
  if (summary.step_time_s() > 0) {
    summary.set_tokens_per_s_per_gpu(static_cast<double>(summary.tokens_per_step()) / summary.step_time_s());
    summary.set_mfu(predicted.summary().mfu() * predicted.summary().step_time_s() / summary.step_time_s());
  }
  summary.set_hbm_capacity_bytes(predicted.summary().hbm_capacity_bytes());
  const int rank = predicted.metadata().traced_ranks_size() ? predicted.metadata().traced_ranks(0) : 0;
  for (const auto& [time, bytes] : parsed.memory) {
    MemorySample* m = trace.add_memory();
    m->set_rank(rank);
    m->set_time_ns(std::llround((time - origin_us) * 1e3));
    m->set_allocated_bytes(bytes.first);
    m->set_reserved_bytes(bytes.second);
    m->set_state_and_buffers_bytes(bytes.first);
    summary.set_peak_allocated_bytes(std::max(summary.peak_allocated_bytes(), bytes.first));
    summary.set_peak_reserved_bytes(std::max(summary.peak_reserved_bytes(), bytes.second));
  }
  summary.set_peak_state_and_buffers_bytes(summary.peak_allocated_bytes());
  std::vector<std::string> kinds;
  for (const auto& [kind, count] : out.nccl_kernels) {
    kinds.push_back(fmt::format("{} {}", count, kind == OP_KIND_UNSPECIFIED ? "other" : op_kind_name(kind)));
  }
  out.notes.insert(out.notes.begin(),
                   fmt::format("read from a PyTorch profiler trace ({}): {} steps, {} kernels; NCCL kernels by the "
                               "collective called: {}; {} matched to the Program's collectives in order ({} not), {} "
                               "FSDP unit spans matched to its compute ops ({} not)",
                               origin, out.steps, out.kernels, kinds.empty() ? "none" : fmt::format("{}", fmt::join(kinds, ", ")),
                               out.collectives_matched, out.collectives_unmatched, out.compute_matched,
                               out.compute_unmatched));
  if (parsed.world_size > 0) {
    out.notes.push_back(fmt::format("the profiled run had {} rank{} (distributedInfo.world_size)", parsed.world_size,
                                    parsed.world_size == 1 ? "" : "s"));
  }
  out.notes.push_back("the run is taken to be the prediction's scenario (a profiler trace does not state its model); "
                      "its memory is the allocator's total allocated (activations included), not the persistent state "
                      "and parameter and gradient buffers alone; a backward span includes the recomputed forward");
  if (parsed.memory.empty()) out.notes.push_back("no \"[memory]\" events: profile with profile_memory=True for the memory curve");
  for (const std::string& note : out.notes) trace.mutable_metadata()->add_executor_notes(note);
  return out;
}

}  // namespace ragged::traces
