#include "traces/kineto_import_events.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"

namespace ragged::traces::kineto {
namespace {

using nlohmann::json;

double number(const json& e, const char* key, const std::string& where) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number()) {
    throw InputError(fmt::format("{}: an event without a number in \"{}\"", where, key));
  }
  return it->get<double>();
}

std::string text(const json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool starts_with_any(const std::string& name, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); });
}

// The collective a name says, its case and underscores ignored:
// "_all_gather_base", "all_gather_into_tensor_coalesced", "allgather",
// "AllGather_RING_LL" are all-gathers.
std::optional<OpKind> kind_in(std::string name) {
  std::erase(name, '_');
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("allgather") != std::string::npos) return ALL_GATHER;
  if (name.find("reducescatter") != std::string::npos) return REDUCE_SCATTER;
  if (name.find("allreduce") != std::string::npos) return ALL_REDUCE;
  if (name.find("alltoall") != std::string::npos) return ALL_TO_ALL;
  return std::nullopt;
}

}  // namespace

KinetoEvents parse_kineto(std::string_view data, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(data);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not JSON: {}", origin, e.what()));
  }
  const auto events = doc.find("traceEvents");
  if (!doc.is_object() || events == doc.end() || !events->is_array()) {
    throw InputError(fmt::format("{}: traceEvents: a PyTorch profiler trace holds a \"traceEvents\" array "
                                 "(torch.profiler's export_chrome_trace)",
                                 origin));
  }
  KinetoEvents out;
  if (const auto props = doc.find("deviceProperties"); props != doc.end() && props->is_array() && !props->empty()) {
    out.device = text(props->front(), "name");
  }
  if (const auto info = doc.find("distributedInfo"); info != doc.end() && info->is_object()) {
    if (const auto size = info->find("world_size"); size != info->end() && size->is_number_integer()) {
      out.world_size = size->get<int64_t>();
    }
  }
  std::map<int64_t, double> launches;  // correlation id -> CPU launch time
  std::vector<std::pair<int64_t, Kernel>> kernels;
  const std::string where = origin + ": traceEvents";
  for (const json& e : *events) {
    if (!e.is_object()) continue;
    const std::string ph = text(e, "ph"), cat = text(e, "cat"), name = text(e, "name");
    const json& args = e.contains("args") && e["args"].is_object() ? e["args"] : json::object();
    if (name == "[memory]") {
      if (args.contains("Total Allocated") && args["Total Allocated"].is_number() &&
          (!args.contains("Device Type") || args["Device Type"] == 1)) {
        const double reserved = args.contains("Total Reserved") && args["Total Reserved"].is_number()
                                    ? args["Total Reserved"].get<double>()
                                    : 0.0;
        out.memory.push_back({number(e, "ts", where),
                              {static_cast<int64_t>(args["Total Allocated"].get<double>()), static_cast<int64_t>(reserved)}});
      }
      continue;
    }
    if (ph != "X") continue;
    const double ts = number(e, "ts", where), dur = number(e, "dur", where);
    const Interval span{ts, ts + dur};
    const int64_t correlation = args.contains("correlation") && args["correlation"].is_number_integer()
                                    ? args["correlation"].get<int64_t>()
                                    : -1;
    if (cat == "kernel") {
      kernels.push_back({correlation, Kernel{name, span, -1, text(args, "Collective name")}});
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (correlation >= 0) launches[correlation] = ts;
    } else if (cat == "user_annotation") {  // the CPU's; a "gpu_user_annotation" mirrors one on the GPU
      if (name.starts_with("ProfilerStep#")) out.steps.push_back({name, span});
      if (starts_with_any(name, {"FSDP::", "FullyShardedDataParallel::"})) out.fsdp.push_back({name, span});
      if (name.starts_with("nccl:")) out.c10d.push_back({name, span});
    }
  }
  for (auto& [correlation, kernel] : kernels) {
    if (const auto it = launches.find(correlation); it != launches.end()) kernel.launch = it->second;
    out.kernels.push_back(std::move(kernel));
  }
  const auto by_start = [](const Annotation& a, const Annotation& b) { return a.cpu.start < b.cpu.start; };
  std::sort(out.steps.begin(), out.steps.end(), by_start);
  std::sort(out.fsdp.begin(), out.fsdp.end(), by_start);
  std::sort(out.c10d.begin(), out.c10d.end(), by_start);
  std::sort(out.kernels.begin(), out.kernels.end(), [](const Kernel& a, const Kernel& b) { return a.gpu.start < b.gpu.start; });
  if (out.steps.empty()) {
    throw InputError(fmt::format("{}: no \"ProfilerStep#N\" annotation: profile whole training steps (torch.profiler "
                                 "with a schedule, calling prof.step() after each step)",
                                 origin));
  }
  if (out.kernels.empty()) {
    throw InputError(fmt::format("{}: no GPU kernel (cat \"kernel\"): profile with activities including "
                                 "ProfilerActivity.CUDA",
                                 origin));
  }
  return out;
}

std::optional<OpKind> collective_kind(const Kernel& kernel, const std::vector<Annotation>& c10d) {
  if (!starts_with_any(kernel.name, {"ncclDevKernel_", "ncclKernel_"})) return std::nullopt;
  if (!kernel.collective.empty()) return kind_in(kernel.collective).value_or(OP_KIND_UNSPECIFIED);
  // The innermost c10d annotation around the launch: the last to start before it that has not ended.
  const Annotation* called = nullptr;
  for (const Annotation& a : c10d) {
    if (a.cpu.start > kernel.launch) break;
    if (kernel.launch <= a.cpu.end) called = &a;
  }
  if (called != nullptr) return kind_in(called->name).value_or(OP_KIND_UNSPECIFIED);
  return kind_in(kernel.name.substr(0, kernel.name.find('('))).value_or(OP_KIND_UNSPECIFIED);
}

}  // namespace ragged::traces::kineto
