#pragma once
// Evaluated candidates on disk, so that a repeated or refined search
// simulates only what it has not seen. One JSON file per scenario,
// <dir>/<16 hex digits>.json, the digits a 64-bit FNV-1a hash of the key;
// the file holds the whole key, so a collision reads as a miss. The key is
// the defaulted scenario as text (but its goodput block, which changes
// nothing simulated), the contents of a config.json it names,
// the simulation settings and the identity of the running binary (its size
// and modification time): a rebuilt simulator never reads an older one's
// figures. Default folder: $XDG_CACHE_HOME/ragged/tune, else
// ~/.cache/ragged/tune.

#include <filesystem>
#include <optional>
#include <string>

#include "scenarios/scenario_loader.hpp"
#include "tune/evaluation.hpp"

namespace ragged::tune {

class ResultCache {
 public:
  // Creates the folder; InputError when it cannot.
  explicit ResultCache(std::filesystem::path dir);
  static std::filesystem::path default_dir();

  const std::filesystem::path& dir() const { return dir_; }
  // nullopt when absent, unreadable or written for another key.
  std::optional<Evaluation> load(const std::string& key) const;
  // Atomic (a temporary renamed into place): ranks sharing the folder never
  // read half a file. InputError when the folder is not writable.
  void store(const std::string& key, const Evaluation& evaluation) const;

 private:
  std::filesystem::path file_for(const std::string& key) const;
  std::filesystem::path dir_;
};

// The cache key of a candidate's scenario (see above).
std::string cache_key(const scenarios::LoadedScenario& scenario);

}  // namespace ragged::tune
