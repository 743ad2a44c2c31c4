#include "sim/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "sim/attention_shape.hpp"

namespace ragged::sim {
namespace {

using nlohmann::json;

// Non-GEMM math (Shampoo's statistics, ...) has no measured rate; half of the
// dense peak is an assumption documented in docs/SIMULATOR.md.
constexpr double kOtherFlopsEfficiency = 0.5;
constexpr double kBf16Bytes = 2.0;

double gemm_flops_of_one(const planner::Gemm& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
}

// Strict reader of one calibration file: every error names the file and the
// field path ("gemm[3].seconds").
class CalibrationFields {
 public:
  explicit CalibrationFields(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(fmt::format("{}: {}", origin_, message));
  }

  const json& field(const json& object, std::string_view key, const std::string& path, std::string_view what) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) fail(fmt::format("field '{}' is missing; it must be {}", path, what));
    return *it;
  }

  // A number in (0, max]: what a device can measure, so a typo's 1e300 is an
  // error here rather than a step time of 1e300 s later.
  double positive(const json& object, std::string_view key, const std::string& path, double max) const {
    const std::string what = fmt::format("a positive number, at most {:g}", max);
    const json& value = field(object, key, path, what);
    if (!value.is_number() || !(value.get<double>() > 0) || !(value.get<double>() <= max)) {
      fail(fmt::format("field '{}' must be {} (got {})", path, what, shortened(value.dump())));
    }
    return value.get<double>();
  }

  double fraction(const json& object, std::string_view key, const std::string& path) const {
    constexpr std::string_view kWhat = "a number in (0, 1]";
    const json& value = field(object, key, path, kWhat);
    if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > 1) {
      fail(fmt::format("field '{}' must be {} (got {})", path, kWhat, value.dump()));
    }
    return value.get<double>();
  }

  double non_negative(const json& object, std::string_view key, const std::string& path, double max) const {
    const std::string what = fmt::format("a number from 0 to {:g}", max);
    const json& value = field(object, key, path, what);
    if (!value.is_number() || !(value.get<double>() >= 0) || !(value.get<double>() <= max)) {
      fail(fmt::format("field '{}' must be {} (got {})", path, what, shortened(value.dump())));
    }
    return value.get<double>();
  }

  bool boolean(const json& object, std::string_view key, const std::string& path) const {
    constexpr std::string_view kWhat = "true or false";
    const json& value = field(object, key, path, kWhat);
    if (!value.is_boolean()) fail(fmt::format("field '{}' must be {} (got {})", path, kWhat, value.dump()));
    return value.get<bool>();
  }

  int64_t positive_int(const json& object, std::string_view key, const std::string& path, int64_t max) const {
    const std::string what = fmt::format("an integer from 1 to {}", max);
    const json& value = field(object, key, path, what);
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(max)) ||
        value.get<int64_t>() <= 0 || value.get<int64_t>() > max) {
      fail(fmt::format("field '{}' must be {} (got {})", path, what, shortened(value.dump())));
    }
    return value.get<int64_t>();
  }

  std::string text(const json& object, std::string_view key, const std::string& path) const {
    constexpr std::string_view kWhat = "a non-empty string";
    const json& value = field(object, key, path, kWhat);
    if (!value.is_string() || value.get<std::string>().empty()) {
      fail(fmt::format("field '{}' must be {} (got {})", path, kWhat, value.dump()));
    }
    return value.get<std::string>();
  }

  const json& object(const json& parent, std::string_view key, const std::string& path) const {
    const json& value = field(parent, key, path, "an object");
    if (!value.is_object()) fail(fmt::format("field '{}' must be an object (got {})", path, value.type_name()));
    return value;
  }

 private:
  std::string origin_;
};

json parse_calibration(const std::filesystem::path& path) {
  try {
    json root = json::parse(read_file(path));
    if (!root.is_object()) {
      throw InputError(fmt::format("{}: expected a JSON object (a calibration file), got {}", path.string(),
                                   root.type_name()));
    }
    return root;
  } catch (const json::parse_error& error) {
    // what() starts with "[json.exception.parse_error.101] "; keep the readable part.
    std::string_view what = error.what();
    if (const size_t bracket = what.find("] "); bracket != std::string_view::npos) what.remove_prefix(bracket + 2);
    throw InputError(fmt::format("{}: malformed JSON at byte {}: {}", path.string(), error.byte, what));
  } catch (const json::out_of_range&) {  // a number beyond a double: 1e400
    throw InputError(fmt::format("{}: malformed JSON: a number out of range", path.string()));
  }
}

}  // namespace

ComputeModel::ComputeModel(GpuComputeSpec spec) : spec_(std::move(spec)) {
  RAGGED_ASSERT(spec_.peak_flops > 0 && spec_.hbm_bytes_per_s > 0, "a compute spec needs positive peaks");
  RAGGED_ASSERT(!spec_.gemm.empty(), "a compute spec needs at least one GEMM point");
  RAGGED_ASSERT(spec_.attention_forward_efficiency > 0 && spec_.attention_backward_efficiency > 0 &&
                    spec_.memory_efficiency > 0 && spec_.launch_seconds >= 0,
                "a compute spec needs positive efficiencies");
  RAGGED_ASSERT(spec_.gemm_fill_k > 0, "a compute spec needs a positive GEMM fill depth");
  auto flops = [](const GemmPoint& p) { return gemm_flops_of_one({p.m, p.n, p.k, 1}); };
  for (const GemmPoint& p : spec_.gemm) {
    RAGGED_ASSERT(flops(p) > 0 && p.flops_per_s > 0, "a GEMM point needs a positive shape and rate");
  }
  std::stable_sort(spec_.gemm.begin(), spec_.gemm.end(),
                   [&](const GemmPoint& a, const GemmPoint& b) { return flops(a) < flops(b); });
  // Shapes of equal FLOPs are one point of the curve: keep their mean rate,
  // each taken to the first shape's depth (gemm_k_loop_efficiency).
  std::vector<GemmPoint> merged;
  int same = 0;
  for (const GemmPoint& p : spec_.gemm) {
    if (!merged.empty() && flops(merged.back()) == flops(p)) {
      ++same;
      const double fill = spec_.gemm_fill_k;
      const double at_depth = p.flops_per_s * gemm_k_loop_efficiency(static_cast<double>(merged.back().k), fill) /
                              gemm_k_loop_efficiency(static_cast<double>(p.k), fill);
      merged.back().flops_per_s += (at_depth - merged.back().flops_per_s) / same;
    } else {
      merged.push_back(p);
      same = 1;
    }
  }
  spec_.gemm = std::move(merged);
}

ComputeModel ComputeModel::defaults(const std::string& preset, double peak_flops, double hbm_bytes_per_s) {
  if (!(peak_flops > 0) || !(hbm_bytes_per_s > 0)) {
    throw InputError(fmt::format("GPU '{}': peak FLOP/s ({}) and HBM bandwidth ({}) must be positive", preset,
                                 peak_flops, hbm_bytes_per_s));
  }
  const GpuComputeSpec* table = find_gpu_table(preset);
  GpuComputeSpec spec = table != nullptr ? *table : *find_gpu_table("h100");
  if (table == nullptr) spec.source = "no table for '" + preset + "': H100 table scaled to its peak; " + spec.source;
  // The scenario may override the peak: achieved GEMM rates keep their
  // fraction of it (efficiencies of attention are fractions already).
  const double scale = peak_flops / spec.peak_flops;
  for (GemmPoint& point : spec.gemm) point.flops_per_s *= scale;
  spec.name = preset;
  spec.peak_flops = peak_flops;
  spec.hbm_bytes_per_s = hbm_bytes_per_s;
  return ComputeModel(std::move(spec));
}

// The calibration file's ranges (docs/RELIABILITY.md): generous beside any
// GPU made (a B200's dense BF16 peak is 2.25e15 FLOP/s, its HBM 8e12 B/s).
constexpr double kMaxPeakFlops = 1e17;
constexpr double kMaxHbmBytesPerS = 1e14;
constexpr int64_t kMaxGemmDim = int64_t{1} << 24;
constexpr double kMaxGemmSeconds = 3600;
constexpr double kMaxLaunchSeconds = 0.01;
constexpr int64_t kMaxSms = 1024;
constexpr double kMaxDriverSeconds = 10;  // a cudaMalloc or cudaFree, and per GiB

ComputeModel ComputeModel::from_calibration(const std::filesystem::path& path, const std::string& preset) {
  const json root = parse_calibration(path);
  const CalibrationFields f(path.string());
  GpuComputeSpec spec;
  spec.name = f.text(root, "device", "device");
  spec.peak_flops = f.positive(root, "peak_flops", "peak_flops", kMaxPeakFlops);
  spec.hbm_bytes_per_s = f.positive(root, "hbm_bytes_per_s", "hbm_bytes_per_s", kMaxHbmBytesPerS);
  const json& gemm = f.field(root, "gemm", "gemm", "a non-empty array of {m, n, k, seconds}");
  if (!gemm.is_array() || gemm.empty()) {
    f.fail(fmt::format("field 'gemm' must be a non-empty array of {{m, n, k, seconds}} (got {})", gemm.type_name()));
  }
  for (size_t i = 0; i < gemm.size(); ++i) {
    const std::string at = fmt::format("gemm[{}]", i);
    if (!gemm[i].is_object()) f.fail(fmt::format("field '{}' must be an object (got {})", at, gemm[i].type_name()));
    GemmPoint point;
    point.m = f.positive_int(gemm[i], "m", at + ".m", kMaxGemmDim);
    point.n = f.positive_int(gemm[i], "n", at + ".n", kMaxGemmDim);
    point.k = f.positive_int(gemm[i], "k", at + ".k", kMaxGemmDim);
    const double seconds = f.positive(gemm[i], "seconds", at + ".seconds", kMaxGemmSeconds);
    point.flops_per_s = gemm_flops_of_one({point.m, point.n, point.k, 1}) / seconds;
    // Above the peak (a few percent of boost clock aside) the time or the peak is wrong.
    if (point.flops_per_s > 1.05 * spec.peak_flops) {
      f.fail(fmt::format("field '{}.seconds': {:g} s is {:.3g} FLOP/s, above peak_flops ({:.3g}): fix the time or the peak",
                         at, seconds, point.flops_per_s, spec.peak_flops));
    }
    spec.gemm.push_back(point);
  }
  spec.memory_efficiency = f.fraction(root, "memory_efficiency", "memory_efficiency");
  spec.launch_seconds = f.positive(root, "launch_seconds", "launch_seconds", kMaxLaunchSeconds);
  spec.source = f.text(root, "source", "source");
  const GpuComputeSpec* table = find_gpu_table(preset);
  if (table == nullptr) table = find_gpu_table("h100");
  if (root.contains("attention")) {
    const json& attention = f.object(root, "attention", "attention");
    spec.attention_forward_efficiency = f.fraction(attention, "forward_efficiency", "attention.forward_efficiency");
    spec.attention_backward_efficiency = f.fraction(attention, "backward_efficiency", "attention.backward_efficiency");
  } else {
    spec.attention_forward_efficiency = table->attention_forward_efficiency;
    spec.attention_backward_efficiency = table->attention_backward_efficiency;
    spec.flash3_forward_efficiency = table->flash3_forward_efficiency;
    spec.flash3_backward_efficiency = table->flash3_backward_efficiency;
    spec.cudnn_forward_efficiency = table->cudnn_forward_efficiency;
    spec.cudnn_backward_efficiency = table->cudnn_backward_efficiency;
    spec.cudnn_narrow_head_forward_share = table->cudnn_narrow_head_forward_share;
    spec.cudnn_narrow_head_backward_share = table->cudnn_narrow_head_backward_share;
    spec.source += fmt::format("; attention not in the file: the simulator's {} defaults", table->name);
  }
  // Optional: the SMs and NCCL's CTAs (0 when absent: the simulation takes
  // the scenario preset's).
  if (root.contains("sms")) spec.sms = static_cast<int>(f.positive_int(root, "sms", "sms", kMaxSms));
  if (root.contains("nccl_ctas_intra_node")) {
    spec.nccl_ctas_intra_node =
        static_cast<int>(f.positive_int(root, "nccl_ctas_intra_node", "nccl_ctas_intra_node", kMaxSms));
  }
  if (root.contains("nccl_ctas_inter_node")) {
    spec.nccl_ctas_inter_node =
        static_cast<int>(f.positive_int(root, "nccl_ctas_inter_node", "nccl_ctas_inter_node", kMaxSms));
  }
  // Optional: whether the device's GEMM kernels are persistent (absent: the
  // preset's GPU class).
  spec.persistent_gemms =
      root.contains("persistent_gemms") ? f.boolean(root, "persistent_gemms", "persistent_gemms") : table->persistent_gemms;
  // How deep the part's kernels fill their K loop is its GPU class's: the
  // file's GEMMs are too few shapes to measure it.
  spec.gemm_fill_k = table->gemm_fill_k;
  // Optional: the share of its GEMM points' rates the device keeps over
  // seconds of back-to-back work (absent: the points are taken as sustained).
  if (root.contains("sustained_clock")) spec.sustained_clock = f.fraction(root, "sustained_clock", "sustained_clock");
  // Optional: the allocator's cudaMalloc and cudaFree, each a line in the
  // call's size (absent: the simulator's assumption).
  if (root.contains("allocator")) {
    const json& allocator = f.object(root, "allocator", "allocator");
    DriverCallCosts calls;
    auto seconds = [&](std::string_view key) {
      return f.non_negative(allocator, key, fmt::format("allocator.{}", key), kMaxDriverSeconds);
    };
    calls.malloc_seconds = seconds("malloc_seconds");
    calls.malloc_seconds_per_gib = seconds("malloc_seconds_per_gib");
    calls.free_seconds = seconds("free_seconds");
    calls.free_seconds_per_gib = seconds("free_seconds_per_gib");
    spec.driver_calls = calls;
  }
  return ComputeModel(std::move(spec));
}

double power_limited_clock(double tdp_watts, double power_limit_watts) {
  if (tdp_watts <= 0 || power_limit_watts <= 0 || power_limit_watts >= tdp_watts) return 1.0;
  const double fixed = 0.2 * tdp_watts;
  return std::cbrt(std::max(0.0, power_limit_watts - fixed) / (tdp_watts - fixed));
}

double expected_max_standard_normal(int64_t n) {
  if (n <= 1) return 0;
  // Simpson's rule over [-9, 9]: the integrand is below 1e-17 outside it for
  // every n up to the largest cluster (Phi(-9)^(n-1) and n phi(9) vanish).
  constexpr int kIntervals = 4000;
  constexpr double kLow = -9.0;
  constexpr double kHigh = 9.0;
  const double h = (kHigh - kLow) / kIntervals;
  const double others = static_cast<double>(n - 1);
  auto integrand = [&](double x) {
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    return cdf > 0 ? x * static_cast<double>(n) * pdf * std::exp(others * std::log(cdf)) : 0.0;
  };
  double sum = integrand(kLow) + integrand(kHigh);
  for (int i = 1; i < kIntervals; ++i) sum += integrand(kLow + i * h) * (i % 2 == 1 ? 4.0 : 2.0);
  return sum * h / 3.0;
}

double slowest_gpu_clock(double spread, int64_t gpus) {
  return std::max(0.1, 1.0 - spread * expected_max_standard_normal(gpus));
}

ComputeModel ComputeModel::with_clock_factor(double factor) const {
  GpuComputeSpec spec = spec_;
  spec.clock_factor = factor;
  return ComputeModel(std::move(spec));
}

ComputeModel ComputeModel::with_sustained_clock(double share) const {
  GpuComputeSpec spec = spec_;
  spec.sustained_clock = share;
  return ComputeModel(std::move(spec));
}

ComputeModel ComputeModel::with_contention(const GpuComputeSpec& gpu) const {
  GpuComputeSpec spec = spec_;
  spec.sms = gpu.sms;
  spec.nccl_ctas_intra_node = gpu.nccl_ctas_intra_node;
  spec.nccl_ctas_inter_node = gpu.nccl_ctas_inter_node;
  spec.persistent_gemms = gpu.persistent_gemms;
  return ComputeModel(std::move(spec));
}

GemmRate ComputeModel::gemm_rate(double flops) const {
  const std::vector<GemmPoint>& points = spec_.gemm;
  auto flops_of = [](const GemmPoint& p) { return gemm_flops_of_one({p.m, p.n, p.k, 1}); };
  auto k_of = [](const GemmPoint& p) { return static_cast<double>(p.k); };
  if (flops <= flops_of(points.front())) return {points.front().flops_per_s, k_of(points.front())};
  if (flops >= flops_of(points.back())) return {points.back().flops_per_s, k_of(points.back())};
  auto upper = std::upper_bound(points.begin(), points.end(), flops,
                                [&](double f, const GemmPoint& p) { return f < flops_of(p); });
  const GemmPoint& hi = *upper;
  const GemmPoint& lo = *(upper - 1);
  const double t = std::log(flops / flops_of(lo)) / std::log(flops_of(hi) / flops_of(lo));
  return {lo.flops_per_s + t * (hi.flops_per_s - lo.flops_per_s), k_of(lo) * std::pow(k_of(hi) / k_of(lo), t)};
}

double gemm_k_loop_efficiency(double k, double fill) { return k / (k + fill); }

double ComputeModel::fastest_gemm_rate() const {
  double fastest = 0;
  for (const GemmPoint& point : spec_.gemm) fastest = std::max(fastest, point.flops_per_s);
  return fastest;
}

double ComputeModel::gemm_work_seconds(const planner::Gemm& gemm) const {
  if (gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0 || gemm.count <= 0) return 0;
  const double one = gemm_flops_of_one(gemm);
  const double copies = static_cast<double>(gemm.count);
  const double m = static_cast<double>(gemm.m), n = static_cast<double>(gemm.n), k = static_cast<double>(gemm.k);
  // The copies run as one batched launch, each at the rate of its own shape:
  // the table's rate for its FLOPs, corrected for the difference between its
  // depth and the depth of the shapes the table measured there.
  // The depth correction extrapolates beyond the measured shapes, so it may
  // slow a shallow GEMM down but never lift a deep one above the fastest
  // rate the table measured.
  const GemmRate table = gemm_rate(one);
  const double fill = spec_.gemm_fill_k;
  const double depth = gemm_k_loop_efficiency(k, fill) / gemm_k_loop_efficiency(table.k, fill);
  const double rate = std::min(table.flops_per_s * depth, fastest_gemm_rate());
  const double compute = copies * one / (rate * spec_.clock_factor * spec_.sustained_clock);
  const double traffic = copies * (m * k + k * n + m * n) * kBf16Bytes;
  return std::max(compute, memory_seconds(traffic));
}

double ComputeModel::gemm_seconds(const planner::Gemm& gemm) const {
  const double work = gemm_work_seconds(gemm);
  return work > 0 ? work + spec_.launch_seconds : 0;
}

// flash-attn's Triton FlashAttention (flash_attn_triton.py, llm-foundry's
// attn_impl: triton) against FlashAttention-2 at the same shape, measured
// per direction on an A100 80GB (Dao 2023, FlashAttention-2, section 4.1,
// figures 5 and 6): FlashAttention-2 "is around 1.3-1.5x faster than
// FlashAttention in Triton in the forward pass and around 2x faster in the
// backward pass". The forward takes the range's middle, 1.4x. Both shares
// hold on every GPU (the paper measured the A100 only).
constexpr double kTritonFlashForwardShareOfFlash2 = 1.0 / 1.4;
constexpr double kTritonFlashBackwardShareOfFlash2 = 1.0 / 2.0;
// SDPA's efficient backend (xformers' CUTLASS kernel, PyTorch's
// mem_eff_attention) runs at FlashAttention-1's speed: the two backends
// trained an XLMR model at 297 and 292 ms a batch (pytorch/pytorch pull
// request #92917, 2023-01-26, where SDPA's flash backend was FlashAttention
// 1), and FlashAttention-2 is "around 2x" FlashAttention's speed (Dao 2023,
// FlashAttention-2, abstract). Half of FlashAttention-2's rate each way.
constexpr double kMemoryEfficientShareOfFlash2 = 1.0 / 2.0;

double ComputeModel::attention_work_seconds(const planner::AttentionWork& attention, bool backward) const {
  if (attention.flops <= 0) return 0;
  double efficiency = backward ? spec_.attention_backward_efficiency : spec_.attention_forward_efficiency;
  if (attention.kernel == models::AttentionKernel::kFlash3) {
    efficiency = backward ? spec_.flash3_backward_efficiency : spec_.flash3_forward_efficiency;
  } else if (attention.kernel == models::AttentionKernel::kCudnn) {
    efficiency = backward ? spec_.cudnn_backward_efficiency : spec_.cudnn_forward_efficiency;
    efficiency *=
        narrow_head_share(kernel_head_dim(attention.kernel, attention.qk_head_dim),
                          backward ? spec_.cudnn_narrow_head_backward_share : spec_.cudnn_narrow_head_forward_share);
  } else if (attention.kernel == models::AttentionKernel::kTritonFlash) {
    efficiency *= backward ? kTritonFlashBackwardShareOfFlash2 : kTritonFlashForwardShareOfFlash2;
  } else if (attention.kernel == models::AttentionKernel::kMemoryEfficient) {
    efficiency *= kMemoryEfficientShareOfFlash2;
  }
  RAGGED_ASSERT(efficiency > 0, "FlashAttention-3 and cuDNN attention need a table with their rates (checked with the "
                                "scenario)");
  // The efficiencies hold at head dim 128 and sequence 8k; other shapes run
  // at their measured share of that rate, a head between the kernel's
  // compiled widths at the next width's rate and work (sim/attention_shape.hpp).
  const double shape = flash_attention_shape_factor(attention, backward);
  const double work = attention.flops * padded_head_work(attention, backward);
  return work / (spec_.peak_flops * efficiency * shape * spec_.clock_factor * spec_.sustained_clock);
}

double ComputeModel::attention_seconds(const planner::AttentionWork& attention, bool backward) const {
  const double work = attention_work_seconds(attention, backward);
  return work > 0 ? work + spec_.launch_seconds : 0;
}

double ComputeModel::memory_seconds(double bytes) const {
  if (bytes <= 0) return 0;
  return bytes / memory_bytes_per_s();
}

double OpCost::seconds() const {
  double s = fixed + sm + memory;
  for (double kernel : persistent) s += kernel;
  return s;
}

OpCost ComputeModel::cost(const planner::Op& op) const {
  const bool persistent = persistent_gemms_of(op);
  OpCost c;
  const ComputeParts p = parts_of(op, &c);
  c.fixed = p.launches;
  c.sm = persistent ? p.attention + p.other : p.gemm + p.attention + p.other;
  c.memory = p.memory;
  if (p.attention > 0) c.sm_kernels.push_back(p.attention);
  if (p.other > 0) c.sm_kernels.push_back(p.other);
  // The non-GEMM math is one of the element-wise kernels, run SM-bound.
  c.memory_kernels = p.memory > 0 ? std::max<int64_t>(1, p.memory_kernels - (p.other > 0 ? 1 : 0)) : 0;
  return c;
}

ComputeParts ComputeModel::parts(const planner::Op& op) const { return parts_of(op, nullptr); }

ComputeParts ComputeModel::parts_of(const planner::Op& op, OpCost* kernels) const {
  using planner::OpKind;
  ComputeParts p;
  switch (op.kind) {
    case OpKind::kComputeFwd:
    case OpKind::kComputeBwd:
    case OpKind::kRecompute:
    case OpKind::kTrainMetrics:
    case OpKind::kOptimizer: {
      int64_t launches = 0;         // SM-bound kernels
      int64_t serial_launches = 0;  // those one after another (a GEMM's copies spread over streams overlap)
      for (const planner::Gemm& gemm : op.work.gemms) {
        const double work = gemm_work_seconds(gemm);
        p.gemm += work;
        p.gemm_flops += gemm.flops();
        if (work > 0) {
          launches += gemm.launches;
          serial_launches += gemm.serial_launches();
        }
        if (kernels != nullptr && work > 0) {
          (persistent_gemms_of(op) ? kernels->persistent : kernels->sm_kernels).push_back(work);
        }
      }
      p.attention = attention_work_seconds(op.work.attention, op.kind == OpKind::kComputeBwd);
      p.attention_flops = p.attention > 0 ? op.work.attention.flops : 0;
      launches += p.attention > 0 ? 1 : 0;
      serial_launches += p.attention > 0 ? 1 : 0;
      if (op.work.other_flops > 0) p.other = op.work.other_flops / (spec_.peak_flops * kOtherFlopsEfficiency);
      p.memory = memory_seconds(op.work.elementwise_bytes);
      p.memory_bytes = op.work.elementwise_bytes;
      // Every element-wise kernel is a launch of its own; an op that only
      // moves bytes (an optimizer's momentum or update) is at least one.
      int64_t elementwise = op.work.elementwise_kernels;
      if (op.work.elementwise_bytes > 0) elementwise = std::max<int64_t>({elementwise, op.host.framework_ops - launches, 1});
      p.kernels = launches + elementwise;
      p.memory_kernels = elementwise;
      p.launches = static_cast<double>(serial_launches + elementwise) * spec_.launch_seconds;
      return p;
    }
    case OpKind::kCast:
    case OpKind::kCopyIn:
    case OpKind::kCopyOut:
    case OpKind::kScale:
    case OpKind::kGradAccumulate:
      // One launch per kernel it runs (a cast per parameter runs several).
      p.memory = memory_seconds(static_cast<double>(op.bytes));
      p.memory_bytes = static_cast<double>(op.bytes);
      p.kernels = std::max<int64_t>(1, op.host.framework_ops);
      p.memory_kernels = p.kernels;
      p.launches = static_cast<double>(p.kernels) * spec_.launch_seconds;
      return p;
    case OpKind::kAlloc:
    case OpKind::kFree:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllReduce:
    case OpKind::kAllToAll:
    case OpKind::kSend:
    case OpKind::kRecv:
      return p;
  }
  return p;
}

}  // namespace ragged::sim
