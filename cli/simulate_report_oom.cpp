// The lines `ragged simulate` leads with when the step does not fit: by how
// much, what holds the memory, and which changes were checked to fit.

#include <fmt/format.h>

#include "cli/simulate_report.hpp"
#include "common/units.hpp"
#include "traces/metrics.hpp"

namespace ragged::cli {
namespace {

std::string gib_text(int64_t bytes) { return format_gib(bytes) + " GiB"; }

// How many of the largest parts to name: the ones a change can move.
constexpr size_t kPartsNamed = 3;

std::string parts_text(const std::vector<sim::MemoryPart>& parts) {
  std::string text;
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    total += parts[i].bytes;
    if (i < kPartsNamed) text += fmt::format("{}{} {}", i == 0 ? "" : ", ", parts[i].what, gib_text(parts[i].bytes));
  }
  return fmt::format("{} (the largest parts of the planner's {} at the peak)", text, gib_text(total));
}

std::string fix_text(const sim::MemoryFix& fix) {
  if (!fix.simulated) {
    return fmt::format("{}: still over, its state and activations alone need {}", fix.flags, gib_text(fix.floor_bytes));
  }
  if (fix.oom) return fmt::format("{}: still over, peak {}", fix.flags, gib_text(fix.peak_reserved_bytes));
  return fmt::format("{}: peak {}, fits{}, {} tokens/s per GPU", fix.flags, gib_text(fix.peak_reserved_bytes),
                     fix.tight ? " tightly" : "", format_rounded(fix.tokens_per_s_per_gpu));
}

// One row per fix under a label, the label on the first.
void print_fixes(const std::string& label, const std::vector<const sim::MemoryFix*>& fixes, std::ostream& out) {
  for (size_t i = 0; i < fixes.size(); ++i) {
    out << fmt::format("  {:<19}{}\n", i == 0 ? label : "", fix_text(*fixes[i]));
  }
}

}  // namespace

void print_out_of_memory(const SimulationReport& r, std::ostream& out) {
  const traces::Summary& s = r.result.trace.summary();
  const int64_t capacity = traces::allocator_capacity_of(s);
  out << fmt::format(
      "OUT OF MEMORY        the step needs {} per GPU at its peak, {} more than the allocator's {} ({} of HBM less "
      "{} for the CUDA context and NCCL)\n",
      gib_text(s.peak_reserved_bytes()), gib_text(s.peak_reserved_bytes() - capacity), gib_text(capacity),
      gib_text(s.hbm_capacity_bytes()), gib_text(s.hbm_capacity_bytes() - capacity));
  if (!r.oom_advice) return;
  const OutOfMemoryAdvice& advice = *r.oom_advice;
  if (!advice.parts.empty()) out << fmt::format("  did not fit        {}\n", parts_text(advice.parts));
  std::vector<const sim::MemoryFix*> fitting, over;
  for (const sim::MemoryFix& fix : advice.fixes.tried) (fix.fits() ? fitting : over).push_back(&fix);
  if (fitting.empty()) {
    out << "  would fit          none of the changes below; `ragged tune --min-gpus` searches every setting for one "
           "that fits\n";
  } else {
    print_fixes("would fit", fitting, out);
  }
  print_fixes("tried", over, out);
  out << "                     (each change simulated like `ragged simulate` with it, unless its floor alone is "
         "over)\n";
}

}  // namespace ragged::cli
