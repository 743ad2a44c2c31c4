// ragged-gpu-validate: checks the CUDA backend on this machine's GPU and
// measures what the simulator needs from it.
//
//   (a) every kernel and GEMM against a host reference (float64 for GEMMs) on
//       fresh random inputs, outputs poisoned beforehand;
//   (b) bf16 GEMM throughput for square and LLM-like shapes (CUDA events,
//       warm-up, median), as TFLOP/s and a fraction of the dense bf16 peak;
//   (b2) the largest of them back to back for seconds after a rest: the
//       share of its rate the card keeps (the calibration's sustained_clock);
//   (c) HBM copy bandwidth; (d) the launch overhead of dependent kernels;
//   (e) a GEMM while SMs are held as a collective holds them, and (f) the
//       allocator's cudaMalloc / cudaFree by size, against the simulator's
//       rule and assumption (contention_bench.hpp);
//   (g) the simulator's calibration file (--output) and a summary.
// Without a GPU it says why, runs its host self-checks only, and writes no
// calibration (nor when a check fails). Exit status: 0 when every check
// passes, 1 when one fails (or on an internal error), 2 on bad input.

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/calibration.hpp"
#include "backend/cuda/contention_bench.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/gpu_validate_report.hpp"
#include "backend/cuda/validate_bench.hpp"
#include "backend/cuda/validate_checks.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "common/line_fit.hpp"
#include "common/units.hpp"
#include "common/version.hpp"
#include "scenarios/gpu_presets.hpp"

namespace ragged::backend::gpu {
namespace {

struct Options {
  std::string output;
  double peak_tflops = 0;
  double hbm_tbps = 0;
  uint64_t seed = 0;
  bool seed_given = false;
  bool quick = false;
  bool cpu_only = false;
  bool print_device_slug = false;
  bool print_gpu_preset = false;
  int device = -1;
  double arena_gib = 0;
  std::vector<std::string> shapes;
  std::vector<int> held_sms = {16, 24};  // NCCL's ring CTAs across nodes and in one node (docs/SIMULATOR.md 6b)
  double sustained_seconds = 6;  // section (b2)'s run; 0 leaves it out
};

GemmShape parse_shape(const std::string& text) {
  GemmShape shape;
  char x1 = 0, x2 = 0, rest = 0;
  long long m = 0, n = 0, k = 0;
  if (std::sscanf(text.c_str(), "%lld%c%lld%c%lld%c", &m, &x1, &n, &x2, &k, &rest) != 5 || x1 != 'x' || x2 != 'x' ||
      m <= 0 || n <= 0 || k <= 0) {
    throw InputError(fmt::format("--shape '{}': expected MxNxK with positive integers, e.g. 4096x4096x4096", text));
  }
  shape.m = m;
  shape.n = n;
  shape.k = k;
  return shape;
}

std::vector<GemmShape> gemm_shapes(const Options& options) {
  std::vector<GemmShape> shapes;
  for (const std::string& text : options.shapes) shapes.push_back(parse_shape(text));
  if (!shapes.empty()) return shapes;
  if (options.quick) return {{1024, 1024, 1024}, {4096, 4096, 4096}};
  // Squares spanning the simulator's table (sim/gpu_tables.cpp), then a
  // Llama-3-8B layer over 16,384 tokens: attention projection, MLP up, down.
  return {{512, 512, 512},    {1024, 1024, 1024},  {2048, 2048, 2048},   {4096, 4096, 4096},
          {8192, 8192, 8192}, {16384, 4096, 4096}, {16384, 14336, 4096}, {16384, 4096, 14336}};
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

int finish(std::ostream& out, const std::vector<CheckResult>& checks) {
  const auto failed = std::count_if(checks.begin(), checks.end(), [](const CheckResult& c) { return !c.passed; });
  if (failed == 0) {
    out << fmt::format("RESULT: PASS ({} checks)\n", checks.size());
    return 0;
  }
  out << fmt::format("RESULT: FAIL ({} of {} checks failed)\n", failed, checks.size());
  return 1;
}

std::vector<CheckResult> run_and_print(std::ostream& out, std::vector<CheckResult> checks) {
  for (const CheckResult& check : checks) out << check_line(check) << '\n';
  return checks;
}

// What sections (e) and (f) measured.
struct ContentionMeasurements {
  std::vector<HeldSmsTiming> held;
  std::optional<AllocatorCallLines> allocator;  // absent: fewer than two sizes fitted in memory
};

// (e) and (f): the GPU-sharing rule and the allocator assumption of the simulator, measured.
ContentionMeasurements measure_contention(CudaDevice& device, const Options& options, const BenchOptions& bench,
                                          std::ostream& out) {
  out << "\n== (e) a GEMM while a collective's share of SMs is held (docs/SIMULATOR.md section 6b) ==\n";
  const GemmShape shape = options.quick ? GemmShape{4096, 4096, 4096} : GemmShape{16384, 14336, 4096};
  std::vector<HeldSmsTiming> timings;
  for (int held : options.held_sms) {
    try {
      timings.push_back(time_gemm_beside_held_sms(device, shape, held, options.seed + 7, bench));
    } catch (const InputError& e) {
      out << fmt::format("{} SMs held: skipped: {}\n", held, e.what());
      continue;
    }
    const HeldSmsTiming& t = timings.back();
    out << fmt::format(
        "gemm {}x{}x{} with {} of {} SMs held: {:.3f} ms alone, {:.3f} ms beside: {:.2f}x{}; the simulator's rule: "
        "{:.2f}x as a persistent kernel, {:.2f}x as one of many waves\n",
        shape.m, shape.n, shape.k, t.held_sms, t.sms, t.alone_seconds * 1e3, t.beside_seconds * 1e3, t.slowdown(),
        t.occupant_outlasted ? "" : " (a lower bound: the GEMMs outran the occupant)",
        persistent_kernel_slowdown(t.sms, t.held_sms), wave_kernel_slowdown(t.sms, t.held_sms));
  }

  out << "\n== (f) the caching allocator's driver calls (docs/SIMULATOR.md section 8) ==\n";
  const std::vector<std::size_t> sizes = {std::size_t{2} << 20, std::size_t{20} << 20, std::size_t{128} << 20,
                                          std::size_t{1} << 30, std::size_t{4} << 30,  std::size_t{16} << 30};
  const std::vector<AllocatorCallTiming> calls = time_allocator_calls(sizes, options.quick ? 3 : 10);
  for (const AllocatorCallTiming& call : calls) {
    out << fmt::format("{:>10}: cudaMalloc {:8.1f} us, cudaFree {:8.1f} us\n",
                       format_bytes(static_cast<double>(call.bytes)), call.malloc_seconds * 1e6,
                       call.free_seconds * 1e6);
  }
  ContentionMeasurements measured{std::move(timings), std::nullopt};
  if (calls.size() >= 2) {
    measured.allocator = fit_allocator_calls(calls);
    const LineFit& m = measured.allocator->malloc_fitted;
    const LineFit& f = measured.allocator->free_fitted;
    out << fmt::format(
        "least squares: cudaMalloc {:.1f} us + {:.1f} us per GiB, cudaFree {:.1f} us + {:.1f} us per GiB (the "
        "calibration takes a negative term as 0); the simulator otherwise assumes 50 us a call whatever the size\n",
        m.intercept * 1e6, m.slope * 1e6, f.intercept * 1e6, f.slope * 1e6);
  }
  return measured;
}

// The GEMM of most FLOPs among those measured: section (b2) sustains it.
const GemmReport& largest_gemm(const std::vector<GemmReport>& gemms) {
  return *std::max_element(gemms.begin(), gemms.end(), [](const GemmReport& a, const GemmReport& b) {
    return gemm_flops(a.timing.shape) < gemm_flops(b.timing.shape);
  });
}

// What section (e) says of the GEMM kernels, when every measurement says the same (-1 otherwise).
int persistent_gemms_measured(const std::vector<HeldSmsTiming>& timings, std::string& why) {
  int verdict = -1;
  for (const HeldSmsTiming& t : timings) {
    const int persistent = nearer_persistent_rule(t.slowdown(), t.sms, t.held_sms) ? 1 : 0;
    if (verdict >= 0 && verdict != persistent) {
      why = "persistent_gemms left out: the held-SM measurements disagree";
      return -1;
    }
    verdict = persistent;
    why += fmt::format("{}{:.2f}x beside {} held SMs (persistent rule {:.2f}x, wave rule {:.2f}x)",
                       why.empty() ? "persistent_gemms from section (e): " : ", ", t.slowdown(), t.held_sms,
                       persistent_kernel_slowdown(t.sms, t.held_sms), wave_kernel_slowdown(t.sms, t.held_sms));
  }
  if (verdict < 0) why = "persistent_gemms not measured";
  return verdict;
}

// The device's measurements as the simulator's calibration.
Calibration make_calibration(const Options& options, const DeviceInfo& info, const std::vector<GemmReport>& gemms,
                             double peak_flops, const std::string& peak_source, const CopyBandwidth& copy,
                             const LaunchOverhead& launch, const ContentionMeasurements& contention,
                             const std::optional<SustainedGemm>& sustained, std::ostream& out) {
  Calibration c;
  c.device = info.name;
  c.peak_flops = peak_flops;
  const std::string cls = device_class(info.name);
  const std::string table_name = cls.empty() ? "h100" : cls;
  std::string hbm_source;
  if (options.hbm_tbps > 0) {
    c.hbm_bytes_per_s = options.hbm_tbps * 1e12;
    hbm_source = "--hbm-tbps";
  } else if (info.dram_bytes_per_s > 0) {
    c.hbm_bytes_per_s = info.dram_bytes_per_s;
    hbm_source = "memory clock x bus width";
  } else {
    c.hbm_bytes_per_s = scenarios::find_gpu_preset(table_name).hbm_bandwidth_gbytes_per_s * 1e9;
    hbm_source = fmt::format("the {} preset's datasheet", table_name);
  }
  for (const GemmReport& gemm : gemms) {
    c.gemm.push_back({gemm.timing.shape.m, gemm.timing.shape.n, gemm.timing.shape.k, gemm.timing.median_seconds});
  }
  const bool kernel_faster = copy.kernel_bytes_per_s >= copy.memcpy_bytes_per_s;
  const double copy_rate = std::max(copy.kernel_bytes_per_s, copy.memcpy_bytes_per_s);
  c.memory_efficiency = copy_rate / c.hbm_bytes_per_s;
  if (c.memory_efficiency > 1) {
    out << fmt::format(
        "note: the copy ran at {:.2f} TB/s, above the {:.2f} TB/s taken as the peak; memory_efficiency "
        "capped at 1 (pass --hbm-tbps)\n",
        copy_rate * 1e-12, c.hbm_bytes_per_s * 1e-12);
    c.memory_efficiency = 1;
  }
  c.launch_seconds = launch.stream_seconds;
  c.sms = info.multiprocessors;
  std::string persistent_why;
  c.persistent_gemms = persistent_gemms_measured(contention.held, persistent_why);
  std::string sustained_why = "sustained_clock not measured";
  if (sustained) {
    c.sustained_clock = std::min(1.0, largest_gemm(gemms).timing.median_seconds / sustained->sustained_seconds);
    sustained_why = fmt::format(
        "sustained_clock = section (b2)'s {}x{}x{} over its last third of {:.1f} s back to back, against its point "
        "above",
        sustained->shape.m, sustained->shape.n, sustained->shape.k, sustained->run_seconds);
  }
  std::string allocator_why = "allocator calls not measured (fewer than two sizes fitted)";
  if (contention.allocator) {
    c.malloc_calls = contention.allocator->malloc_costs;
    c.free_calls = contention.allocator->free_costs;
    allocator_why =
        "allocator = section (f)'s least-squares lines of cudaMalloc and cudaFree in GiB, host wall time with the "
        "device idle, a negative term taken as 0";
  }
  c.source = fmt::format(
      "ragged-gpu-validate {} on {}, {}: GEMMs bf16 x bf16 -> bf16 (cuBLAS, fp32 accumulation), kernel time = median "
      "of CUDA-event timings after warm-up; peak_flops {}; hbm_bytes_per_s from {}; memory_efficiency = the {} copy "
      "(bytes read + written) over it; launch_seconds = chains of empty kernels launched one by one (graph replay: "
      "{:.2f} us); sms = the device's; {}; {}; {}; attention not measured, so left out (the simulator takes its "
      "defaults for the scenario's GPU)",
      kVersion, info.name, utc_now(), peak_source, hbm_source, kernel_faster ? "kernel" : "cudaMemcpy",
      launch.graph_seconds * 1e6, persistent_why, sustained_why, allocator_why);
  return c;
}

int run_gpu(const Options& options, std::ostream& out, std::vector<CheckResult> checks) {
  const int ordinal = options.device >= 0 ? options.device : default_device_ordinal();
  const DeviceInfo info = query_device(ordinal);
  out << fmt::format("device {}: {} (compute {}.{}, {} SMs, {} L2, {} memory, {:.2f} TB/s DRAM by clock x bus)\n",
                     ordinal, info.name, info.compute_major, info.compute_minor, info.multiprocessors,
                     format_bytes(static_cast<double>(info.l2_bytes)),
                     format_bytes(static_cast<double>(info.total_memory_bytes)), info.dram_bytes_per_s * 1e-12);

  // The arena: what the largest GEMM set and the copy need, within 80% of free memory.
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaSetDevice(ordinal));
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const double wanted = options.arena_gib > 0 ? options.arena_gib * kGiB : (options.quick ? 2.0 : 8.0) * kGiB;
  const auto arena_bytes = static_cast<std::size_t>(std::min(wanted, 0.8 * static_cast<double>(free_bytes)));
  CudaDevice device(ordinal, arena_bytes);
  out << fmt::format("arena: {} of {} free\n", format_bytes(static_cast<double>(arena_bytes)),
                     format_bytes(static_cast<double>(free_bytes)));

  out << "\n== (a) kernels and GEMMs against the host ==\n";
  for (CheckResult& check : run_and_print(out, gpu_kernel_checks(device, options.seed)))
    checks.push_back(std::move(check));

  double peak_flops = dense_bf16_peak_flops(info.name);
  std::string peak_source =
      fmt::format("{:.1f} TFLOP/s, the dense bf16 datasheet peak of the device class", peak_flops * 1e-12);
  if (options.peak_tflops > 0) {
    peak_flops = options.peak_tflops * 1e12;
    peak_source = fmt::format("{:.1f} TFLOP/s from --peak-tflops", options.peak_tflops);
  }
  out << "\n== (b) GEMM throughput, bf16 ==\n";
  if (peak_flops > 0)
    out << fmt::format("peak: {}\n", peak_source);
  else
    out << "peak: unknown device (pass --peak-tflops); no fractions of peak\n";
  BenchOptions bench;
  if (options.quick) {
    bench.max_repetitions = 30;
    bench.target_seconds = 0.1;
  }
  std::vector<GemmReport> gemms;
  for (const GemmShape& shape : gemm_shapes(options)) {
    try {
      gemms.push_back({time_gemm_bf16(device, shape, options.seed + gemms.size() * 1000, bench), peak_flops});
      out << gemm_line(gemms.back()) << '\n';
    } catch (const InputError& e) {
      out << fmt::format("gemm bf16 {}x{}x{}: skipped: {}\n", shape.m, shape.n, shape.k, e.what());
    }
  }
  if (gemms.empty()) throw InputError("no GEMM shape could be measured");
  if (peak_flops <= 0) {
    for (const GemmReport& gemm : gemms) peak_flops = std::max(peak_flops, gemm.timing.flops_per_s());
    peak_source =
        fmt::format("{:.1f} TFLOP/s, the best measured GEMM (unknown device; pass --peak-tflops)", peak_flops * 1e-12);
  }
  // The layer-sized GEMMs again with a 1 GiB copy between calls, as a training
  // step alternates them with memory-bound kernels: whether back-to-back
  // timing at full power under-rates them (reported; the calibration keeps
  // the back-to-back figures).
  if (!options.quick) {
    BenchOptions interleaved = bench;
    interleaved.interleave_copy_bytes = std::size_t{1} << 30;
    for (const GemmReport& gemm : gemms) {
      const GemmShape& shape = gemm.timing.shape;
      if (shape.m < 16384) continue;
      try {
        const GemmTiming t = time_gemm_bf16(device, shape, options.seed + 77, interleaved);
        out << fmt::format("gemm bf16 {}x{}x{} between 1 GiB copies: median {:.4f} ms over {} calls, {:.1f} TFLOP/s "
                           "({:+.1f}% against back to back)\n",
                           shape.m, shape.n, shape.k, t.median_seconds * 1e3, t.repetitions, t.flops_per_s() * 1e-12,
                           100 * (gemm.timing.median_seconds / t.median_seconds - 1));
      } catch (const InputError& e) {
        out << fmt::format("gemm bf16 {}x{}x{} between copies: skipped: {}\n", shape.m, shape.n, shape.k, e.what());
      }
    }
  }

  // (b2) The largest GEMM above, back to back for seconds after a rest: the
  // share of its rate the card keeps once the power limit holds the clock
  // (the calibration's sustained_clock; docs/SIMULATOR.md section 7).
  std::optional<SustainedGemm> sustained;
  if (!options.quick && options.sustained_seconds > 0) {
    const GemmShape shape = largest_gemm(gemms).timing.shape;
    out << "\n== (b2) a GEMM sustained, bf16 ==\n";
    sustained = measure_sustained_gemm(device, shape, options.seed + 99, 2.0, options.sustained_seconds);
    const double flops = gemm_flops(shape);
    out << fmt::format("gemm bf16 {}x{}x{} after 2 s at rest: the first {} calls {:.1f} TFLOP/s, the last third of "
                       "{} calls ({:.1f} s) {:.1f} TFLOP/s: {:.3f} of the burst\n",
                       shape.m, shape.n, shape.k, SustainedGemm::kBurstCalls, flops / sustained->burst_seconds * 1e-12,
                       sustained->calls, sustained->run_seconds, flops / sustained->sustained_seconds * 1e-12,
                       sustained->burst_seconds / sustained->sustained_seconds);
  }

  out << "\n== (c) HBM copy bandwidth ==\n";
  // 1 GiB each way (far beyond L2), less in a small arena.
  const std::size_t copy_bytes =
      std::min<std::size_t>(std::size_t{1} << 30, device.arena().capacity() / 2 / 4096 * 4096 - 4096);
  const CopyBandwidth copy = measure_copy_bandwidth(device, copy_bytes, bench);
  out << fmt::format("copy of {}: kernel {:.3f} TB/s, cudaMemcpy {:.3f} TB/s (bytes read + written)\n",
                     format_bytes(static_cast<double>(copy.bytes)), copy.kernel_bytes_per_s * 1e-12,
                     copy.memcpy_bytes_per_s * 1e-12);

  out << "\n== (d) launch overhead ==\n";
  const LaunchOverhead launch = measure_launch_overhead(device, 1000, options.quick ? 5 : 20);
  out << fmt::format("empty-kernel chain: {:.2f} us per kernel launched one by one, {:.2f} us from a CUDA graph\n",
                     launch.stream_seconds * 1e6, launch.graph_seconds * 1e6);
  out << fmt::format("arena high-water mark: {}\n",
                     format_bytes(static_cast<double>(device.arena().high_water_mark())));

  const ContentionMeasurements contention = measure_contention(device, options, bench, out);

  const Calibration calibration =
      make_calibration(options, info, gemms, peak_flops, peak_source, copy, launch, contention, sustained, out);
  out << "\n== (g) summary ==\n";
  print_check_table(out, checks);
  out << '\n';
  print_gemm_table(out, gemms);
  const auto flagged = std::count_if(gemms.begin(), gemms.end(), [](const GemmReport& g) { return g.flagged(); });
  if (flagged > 0) {
    out << fmt::format("{} of {} GEMM shapes below {:.0f}% of the {:.1f} TFLOP/s peak\n", flagged, gemms.size(),
                       100 * kGemmFlagFraction, peak_flops * 1e-12);
  }
  out << fmt::format(
      "\nHBM copy: kernel {:.3f} TB/s, cudaMemcpy {:.3f} TB/s; memory_efficiency {:.3f} of {:.2f} TB/s\n",
      copy.kernel_bytes_per_s * 1e-12, copy.memcpy_bytes_per_s * 1e-12, calibration.memory_efficiency,
      calibration.hbm_bytes_per_s * 1e-12);
  out << fmt::format("launch: {:.2f} us per dependent kernel (graph replay {:.2f} us)\n", launch.stream_seconds * 1e6,
                     launch.graph_seconds * 1e6);
  const bool passed = std::all_of(checks.begin(), checks.end(), [](const CheckResult& c) { return c.passed; });
  if (!options.output.empty() && !passed) {
    out << fmt::format("calibration NOT written to {}: a check failed, so the measurements are suspect\n",
                       options.output);
  } else if (!options.output.empty()) {
    write_file_atomically(options.output, calibration_json(calibration));
    out << fmt::format("calibration written to {} (ragged simulate --calibration {})\n", options.output,
                       options.output);
  }
  return finish(out, checks);
}

int run(int argc, char** argv) {
  Options options;
  CLI::App app{"Checks the CUDA backend on this GPU and measures the simulator's calibration", "ragged-gpu-validate"};
  app.set_version_flag("--version", std::string("ragged-gpu-validate ") + kVersion);
  app.add_option("--output,-o", options.output, "write the simulator's calibration JSON here (atomically)");
  app.add_option("--peak-tflops", options.peak_tflops, "dense bf16 peak in TFLOP/s (default: by device name)")
      ->check(CLI::PositiveNumber);
  app.add_option("--hbm-tbps", options.hbm_tbps, "HBM bandwidth in TB/s (default: memory clock x bus width)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", options.seed, "seed of the random inputs (default: fresh each run)");
  app.add_option("--device", options.device, "CUDA device ordinal (default: by local rank, else 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--arena-gib", options.arena_gib, "device arena in GiB (default 8, 2 with --quick)")
      ->check(CLI::PositiveNumber);
  app.add_option("--sustained-seconds", options.sustained_seconds,
                 "seconds of back-to-back GEMMs in section (b2), the calibration's sustained_clock (default 6; 0 "
                 "leaves it out)")
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--shape", options.shapes, "a GEMM shape MxNxK to time (repeatable; replaces the defaults)");
  app.add_option("--held-sms", options.held_sms,
                 "SMs to hold beside a GEMM in section (e) (repeatable; default 16 and 24, NCCL's ring CTAs)")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--quick", options.quick, "fewer shapes and repetitions (a smoke test)");
  app.add_flag("--cpu-only", options.cpu_only, "run only the host self-checks");
  app.add_flag("--print-device-slug", options.print_device_slug,
               "print the device's file-name-safe name ('none' without a GPU) and exit");
  app.add_flag("--print-gpu-preset", options.print_gpu_preset,
               "print the simulator's GPU preset for the device (for --gpu; 'none' without a GPU or for an unknown "
               "device) and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ragged-gpu-validate: error: " << e.what() << "\n(run 'ragged-gpu-validate --help' for usage)\n";
    return 2;
  }
  gemm_shapes(options);  // bad --shape values are bad input, GPU or not
  options.seed_given = app.count("--seed") > 0;
  if (!options.seed_given) options.seed = std::random_device{}() * 0x100000001ull ^ std::random_device{}();

  std::string why;
  const bool gpu = !options.cpu_only && cuda_device_available(&why);
  if (options.print_device_slug || options.print_gpu_preset) {
    const std::string name = gpu ? query_device(options.device >= 0 ? options.device : default_device_ordinal()).name : "";
    const std::string preset = device_class(name);
    std::cout << (!gpu ? "none" : options.print_device_slug ? device_slug(name) : preset.empty() ? "none" : preset)
              << '\n';
    return 0;
  }
  std::ostream& out = std::cout;
  out << fmt::format("ragged-gpu-validate {}: seed {} (--seed {} repeats this run)\n", kVersion, options.seed,
                     options.seed);
  out << "\n== host self-checks ==\n";
  std::vector<CheckResult> checks = run_and_print(out, cpu_self_checks(options.seed));
  if (!gpu) {
    out << (options.cpu_only ? std::string("--cpu-only; skipping GPU checks\n")
                             : fmt::format("no GPU: {}; skipping GPU checks\n", why));
    if (!options.output.empty())
      out << fmt::format("no calibration written to {} (nothing measured)\n", options.output);
    out << '\n';
    print_check_table(out, checks);
    return finish(out, checks);
  }
  return run_gpu(options, out, std::move(checks));
}

}  // namespace
}  // namespace ragged::backend::gpu

int main(int argc, char** argv) {
  try {
    return ragged::backend::gpu::run(argc, argv);
  } catch (const ragged::InputError& e) {
    std::cerr << "ragged-gpu-validate: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ragged-gpu-validate: internal error: " << e.what() << '\n';
    return 1;
  }
}
