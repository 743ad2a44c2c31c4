#include "tune/result_cache.hpp"

#include <chrono>
#include <cstdlib>
#include <system_error>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/file_io.hpp"

namespace ragged::tune {
namespace {

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64-bit offset basis and prime (Fowler, Noll, Vo)
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// The running binary's size and modification time, once per process.
const std::string& binary_identity() {
  static const std::string identity = [] {
    std::error_code error;
    const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error) return std::string("unknown binary");
    const auto size = std::filesystem::file_size(path, error);
    const auto time = std::filesystem::last_write_time(path, error);
    if (error) return path.string();
    return fmt::format("{} {} {}", path.string(), size, time.time_since_epoch().count());
  }();
  return identity;
}

}  // namespace

ResultCache::ResultCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error || !std::filesystem::is_directory(dir_)) {
    throw InputError(fmt::format("--cache-dir {}: cannot create the folder ({}); give another or --no-cache",
                                 dir_.string(), error ? error.message() : "not a folder"));
  }
}

std::filesystem::path ResultCache::default_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') return std::filesystem::path(xdg) / "ragged" / "tune";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr && *home != '\0' ? home : ".") / ".cache" / "ragged" / "tune";
}

std::filesystem::path ResultCache::file_for(const std::string& key) const {
  return dir_ / fmt::format("{:016x}.json", fnv1a(key));
}

std::optional<Evaluation> ResultCache::load(const std::string& key) const {
  const auto path = file_for(key);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  try {
    const nlohmann::json entry = nlohmann::json::parse(read_file(path));
    if (entry.at("key") != key) return std::nullopt;
    Evaluation evaluation = evaluation_from_json(entry.at("evaluation"));
    evaluation.cached = true;
    return evaluation;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable or from another version: simulated again and overwritten
  }
}

void ResultCache::store(const std::string& key, const Evaluation& evaluation) const {
  const nlohmann::json entry = {{"key", key}, {"evaluation", to_json(evaluation)}};
  write_file_atomically(file_for(key), entry.dump());
}

std::string cache_key(const scenarios::LoadedScenario& scenario) {
  // The goodput block changes no figure cached here: goodput is computed
  // from them after the search (tune/candidate_goodput.hpp).
  scenarios::Scenario simulated = scenario.scenario;
  simulated.clear_goodput();
  std::string key = "ragged tune 1\n" + binary_identity() + "\nsimulation: auto mode, gpu sharing, host path\n" +
                    scenarios::to_text(simulated);
  if (scenario.scenario.model().has_hf_config()) {
    key += "\nconfig.json:\n" + read_file(scenario.base_dir / scenario.scenario.model().hf_config());
  }
  return key;
}

}  // namespace ragged::tune
