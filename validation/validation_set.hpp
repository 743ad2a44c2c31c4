#pragma once
// A validation folder's published runs (runs.textproto, schema
// validation/validation.proto), read and checked: every run names its set, a
// scenario (unless excluded), its source and its published figures; ids are
// unique; scenario files exist. Any problem is one InputError naming the file,
// the line and column and the field path ("runs[3].source.url"), with the fix.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/field_locations.hpp"
#include "validation/validation.pb.h"

namespace ragged::validation {

inline constexpr const char* kManifestName = "runs.textproto";

struct ValidationSet {
  std::filesystem::path directory;  // the folder; scenario paths are relative to it
  std::string origin;               // the manifest as errors name it
  std::vector<Run> runs;            // in file order
  scenarios::FieldLocations locations;

  // "origin:line:col: runs[i].field" for an error found later about run `i`.
  std::string where(size_t run, std::string_view field) const;
  // The scenario file of a run (empty for a shipped scenario or an excluded run).
  std::filesystem::path scenario_path(const Run& run) const;
  // The index of the run with this id; an id the set does not hold is a programmer error.
  size_t index_of(std::string_view id) const;
};

// Reads <directory>/runs.textproto.
ValidationSet load_validation_set(const std::filesystem::path& directory);
// The same from text (tests); `directory` is where scenario files are looked for.
ValidationSet parse_validation_set(std::string_view text, const std::string& origin,
                                   const std::filesystem::path& directory);

// The repository's validation/ folder, as the build recorded it (the source
// tree this binary was built from).
std::filesystem::path default_validation_dir();

// Published throughput in tokens/s per GPU: as published, or TFLOP/s divided
// by the FLOPs per token of the source's convention. nullopt: the source
// reports the run out of memory.
std::optional<double> published_tokens_per_s(const Published& published);
bool published_ran(const Published& published);  // `ran`, default true

std::string set_name(Set set);  // "validation", "calibration"

}  // namespace ragged::validation
