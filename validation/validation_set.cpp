#include "validation/validation_set.hpp"

#include <map>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/text_format.hpp"
#include "validation/validation_summary.hpp"

#ifndef RAGGED_VALIDATION_DIR
#error "RAGGED_VALIDATION_DIR: the build defines it as the source tree's validation/ folder"
#endif

namespace ragged::validation {
namespace {

bool valid_id(const std::string& id) {
  if (id.empty()) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool is_shipped(const std::string& name) {
  for (const EmbeddedFile& file : scenarios::shipped_scenarios()) {
    if (file.name == name) return true;
  }
  return false;
}

// Checks one run; `fail(field, message)` throws with the run's location.
class RunChecker {
 public:
  RunChecker(const ValidationSet& set, size_t index) : set_(set), index_(index), run_(set.runs[index]) {}

  void check(std::map<std::string, size_t>* ids) {
    check_id(ids);
    if (run_.set() == SET_UNSPECIFIED) fail("set", "missing: write set: VALIDATION, or set: CALIBRATION for a calibration point");
    check_scenario();
    check_source();
    check_published();
    check_remeasured();
    check_throughput_excluded();
    check_first_prediction();
  }

 private:
  [[noreturn]] void fail(std::string_view field, const std::string& message) const {
    throw InputError(fmt::format("{}: {}", set_.where(index_, field), message));
  }

  void check_id(std::map<std::string, size_t>* ids) const {
    if (run_.id().empty()) fail("id", "missing: every run has an id (lower-case letters, digits, '-', '.', '_')");
    if (!valid_id(run_.id())) {
      fail("id", fmt::format("'{}' has characters other than lower-case letters, digits, '-', '.' and '_'", run_.id()));
    }
    auto [it, inserted] = ids->emplace(run_.id(), index_);
    if (!inserted) fail("id", fmt::format("'{}' is already the id of runs[{}]; ids are unique", run_.id(), it->second));
  }

  void check_scenario() const {
    switch (run_.scenario_source_case()) {
      case Run::kScenario: {
        if (run_.scenario().empty()) fail("scenario", "empty: give the scenario file, relative to the folder");
        const std::filesystem::path path = set_.scenario_path(run_);
        std::error_code error;
        if (!std::filesystem::is_regular_file(path, error)) {
          fail("scenario", fmt::format("'{}' is not a file (looked for {}); scenario paths are relative to the folder "
                                       "holding {}", run_.scenario(), path.string(), kManifestName));
        }
        return;
      }
      case Run::kShippedScenario:
        if (!is_shipped(run_.shipped_scenario())) {
          fail("shipped_scenario", fmt::format("'{}' is not a shipped scenario (ragged scenario list names them); for a "
                                               "file, write scenario: \"path\"", run_.shipped_scenario()));
        }
        return;
      case Run::SCENARIO_SOURCE_NOT_SET:
        if (run_.excluded().empty()) {
          fail("scenario", "missing: give scenario: \"scenarios/FILE.textproto\" or shipped_scenario: \"NAME\" "
                           "(a run without one must say why in excluded: \"...\")");
        }
        return;
    }
  }

  void check_source() const {
    if (!run_.has_source()) fail("source", "missing: give source { title url table row } (and commit when known)");
    check_source_fields(run_.source(), "source");
  }

  void check_source_fields(const Source& s, const std::string& at) const {
    if (s.title().empty()) fail(at + ".title", "missing: the paper, blog or repository file");
    if (s.url().empty()) fail(at + ".url", "missing: the URL or arXiv id of the source");
    if (s.table().empty()) fail(at + ".table", "missing: the table (or section) that holds the figure");
    if (s.row().empty()) fail(at + ".row", "missing: how to find the row (its cells as printed)");
  }

  void check_remeasured() const {
    for (int i = 0; i < run_.remeasured_size(); ++i) {
      const Remeasurement& r = run_.remeasured(i);
      const std::string at = fmt::format("remeasured[{}]", i);
      if (!published_tokens_per_s(run_.published())) {
        fail(at, "the run publishes no throughput to set this measurement beside; drop remeasured or give "
                 "published { tokens_per_s_per_gpu: N }");
      }
      if (!r.has_source()) fail(at + ".source", "missing: give source { title url table row } of this measurement");
      check_source_fields(r.source(), at + ".source");
      if (!(r.tokens_per_s_per_gpu() > 0)) {
        fail(at + ".tokens_per_s_per_gpu", fmt::format("must be positive (got {})", r.tokens_per_s_per_gpu()));
      }
    }
  }

  void check_first_prediction() const {
    if (!run_.has_first_prediction()) return;
    const FirstPrediction& f = run_.first_prediction();
    if (!(f.tokens_per_s_per_gpu() > 0)) {
      fail("first_prediction.tokens_per_s_per_gpu", fmt::format("must be positive (got {})", f.tokens_per_s_per_gpu()));
    }
    if (f.commit().empty()) fail("first_prediction.commit", "missing: the commit whose simulator made the prediction");
    const bool date_shape = f.date().size() == 10 && f.date()[4] == '-' && f.date()[7] == '-';
    if (!f.date().empty() && !date_shape) {
      fail("first_prediction.date", fmt::format("'{}' is not a date: write YYYY-MM-DD", f.date()));
    }
    if (!f.has_peak_memory_gib()) return;
    if (!(f.peak_memory_gib() > 0)) {
      fail("first_prediction.peak_memory_gib", fmt::format("must be positive (got {})", f.peak_memory_gib()));
    }
    if (!published_memory(run_.published())) {
      fail("first_prediction.peak_memory_gib",
           "no published memory to compare it with: add published.peak_memory_gib or peak_allocated_gib, or drop it");
    }
  }

  void check_throughput_excluded() const {
    if (run_.throughput_excluded().empty()) return;
    if (!run_.excluded().empty()) {
      fail("throughput_excluded", "given with excluded: an excluded run is left out of every statistic; keep one");
    }
    if (!published_memory(run_.published()) && published_ran(run_.published())) {
      fail("throughput_excluded", "the run publishes no memory and ran, so nothing of it would be compared: give "
                                  "published { peak_memory_gib | peak_allocated_gib } or write excluded: \"...\"");
    }
  }

  void check_published() const {
    if (!run_.has_published()) {
      fail("published", "missing: give published { tokens_per_s_per_gpu: N } (or tflops { ... }), or "
                        "published { ran: false } for a run the source reports out of memory");
    }
    const Published& p = run_.published();
    const bool has_throughput = p.throughput_case() != Published::THROUGHPUT_NOT_SET;
    if (published_ran(p) && !has_throughput) {
      fail("published", "no throughput: give tokens_per_s_per_gpu or tflops { per_gpu flops_per_token convention }, "
                        "or ran: false for a run the source reports out of memory");
    }
    if (!published_ran(p) && has_throughput) {
      fail("published.ran", "false, but a throughput is given: a run that did not run has none; drop one of them");
    }
    if (p.throughput_case() == Published::kTokensPerSPerGpu && !(p.tokens_per_s_per_gpu() > 0)) {
      fail("published.tokens_per_s_per_gpu", fmt::format("must be positive (got {})", p.tokens_per_s_per_gpu()));
    }
    if (p.throughput_case() == Published::kTflops) {
      const Tflops& t = p.tflops();
      if (!(t.per_gpu() > 0)) fail("published.tflops.per_gpu", fmt::format("must be positive (got {})", t.per_gpu()));
      if (!(t.flops_per_token() > 0)) {
        fail("published.tflops.flops_per_token",
             fmt::format("must be positive (got {}): the FLOPs per token of the source's convention, which "
                         "turns its TFLOP/s into tokens/s", t.flops_per_token()));
      }
      if (t.convention().empty()) fail("published.tflops.convention", "missing: state the source's FLOP convention");
    }
    if (p.has_peak_memory_gib() && !(p.peak_memory_gib() > 0)) {
      fail("published.peak_memory_gib", fmt::format("must be positive (got {})", p.peak_memory_gib()));
    }
    if (p.has_peak_allocated_gib() && !(p.peak_allocated_gib() > 0)) {
      fail("published.peak_allocated_gib", fmt::format("must be positive (got {})", p.peak_allocated_gib()));
    }
    if (p.has_peak_memory_gib() && p.has_peak_allocated_gib()) {
      fail("published.peak_allocated_gib",
           "give one memory figure: peak_memory_gib (reserved) or peak_allocated_gib (allocated), not both");
    }
    if (p.has_memory_rank()) {
      if (p.memory_rank() < 0) {
        fail("published.memory_rank", fmt::format("must be a rank, 0 or more (got {})", p.memory_rank()));
      }
      if (!p.has_peak_memory_gib() && !p.has_peak_allocated_gib()) {
        fail("published.memory_rank",
             "names the rank of a memory figure: add published.peak_memory_gib or peak_allocated_gib, or drop it");
      }
    }
  }

  const ValidationSet& set_;
  size_t index_;
  const Run& run_;
};

}  // namespace

std::string ValidationSet::where(size_t run, std::string_view field) const {
  const std::string path = fmt::format("runs[{}].{}", run, field);
  auto location = locations.find(path);
  std::string at = location ? fmt::format("{}:{}:{}", origin, location->line, location->column) : origin;
  return fmt::format("{}: {}", at, path);
}

size_t ValidationSet::index_of(std::string_view id) const {
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].id() == id) return i;
  }
  RAGGED_ASSERT(false, "no run of the set has this id");
  return runs.size();
}

std::filesystem::path ValidationSet::scenario_path(const Run& run) const {
  if (run.scenario_source_case() != Run::kScenario) return {};
  std::filesystem::path path = run.scenario();
  return path.is_absolute() ? path : directory / path;
}

ValidationSet parse_validation_set(std::string_view text, const std::string& origin,
                                   const std::filesystem::path& directory) {
  ValidationSet set;
  set.directory = directory;
  set.origin = origin;
  set.locations = scenarios::locate_textproto_fields(text);
  Manifest message;
  scenarios::parse_text_message(text, origin, set.locations, &message);
  scenarios::check_text_fields(message, origin, set.locations);  // reports print its notes and reasons
  set.runs.assign(message.runs().begin(), message.runs().end());
  if (set.runs.empty()) throw InputError(fmt::format("{}: no runs: add runs {{ id: ... }} entries", origin));
  std::map<std::string, size_t> ids;
  for (size_t i = 0; i < set.runs.size(); ++i) RunChecker(set, i).check(&ids);
  return set;
}

ValidationSet load_validation_set(const std::filesystem::path& directory) {
  std::error_code unreadable;  // a name too long or a folder we may not enter: refused below
  if (!std::filesystem::is_directory(directory, unreadable)) {
    throw InputError(fmt::format("{}: not a folder; give a validation folder (one holding {})", directory.string(),
                                 kManifestName));
  }
  const std::filesystem::path manifest = directory / kManifestName;
  if (!std::filesystem::is_regular_file(manifest, unreadable)) {
    throw InputError(fmt::format("{}: no {} in this folder; a validation folder holds {} (schema "
                                 "validation/validation.proto) and the scenarios it names",
                                 directory.string(), kManifestName, kManifestName));
  }
  // Errors and reports name the manifest relative to the working directory when it lies below it.
  std::error_code error;
  const std::filesystem::path here = std::filesystem::current_path(error);
  const std::filesystem::path absolute = std::filesystem::absolute(manifest, error);
  std::filesystem::path shown = manifest;
  if (!error) {
    const std::filesystem::path relative = absolute.lexically_normal().lexically_relative(here);
    shown = !relative.empty() && *relative.begin() != ".." ? relative : absolute.lexically_normal();
  }
  return parse_validation_set(read_file(manifest), shown.string(), directory);
}

std::filesystem::path default_validation_dir() { return std::filesystem::path(RAGGED_VALIDATION_DIR); }

std::optional<double> published_tokens_per_s(const Published& published) {
  switch (published.throughput_case()) {
    case Published::kTokensPerSPerGpu: return published.tokens_per_s_per_gpu();
    case Published::kTflops: return published.tflops().per_gpu() * 1e12 / published.tflops().flops_per_token();
    case Published::THROUGHPUT_NOT_SET: break;
  }
  return std::nullopt;
}

bool published_ran(const Published& published) { return !published.has_ran() || published.ran(); }

std::string set_name(Set set) {
  switch (set) {
    case VALIDATION: return "validation";
    case CALIBRATION: return "calibration";
    default: return "unspecified";
  }
}

}  // namespace ragged::validation
