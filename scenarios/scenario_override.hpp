#pragma once
// Field overrides given on the command line (`--set training.prefetch_depth=0`):
// one scenario field, named by its dotted path, set to a value written as the
// text format writes it (a number, true/false, an enum name, a quoted string
// or a `{ ... }` message). Applied to the scenario as written, before
// defaults and validation, so an override is checked like the file's own
// fields and a derived default follows it.

#include <string>
#include <string_view>
#include <vector>

#include "scenarios/scenario_loader.hpp"

namespace ragged::scenarios {

struct FieldOverride {
  std::string path;   // "training.prefetch_depth"
  std::string value;  // "0"
};

// "PATH=VALUE"; throws InputError naming the text and the expected form.
FieldOverride parse_override(std::string_view spec);

// Sets every override on `scenario` in order (a later one wins); an unknown
// field (with the closest name), a repeated field or a value that does not
// read as the field's type throws InputError naming the override.
void apply_overrides(Scenario& scenario, const std::vector<FieldOverride>& overrides);

// Every "PATH=VALUE" parsed and checked (parse_override, check_overrides).
std::vector<FieldOverride> parse_overrides(const std::vector<std::string>& specs);

// Throws what apply_overrides would for every override (unknown field, bad
// value) before any scenario is read, so the error names only the override.
void check_overrides(const std::vector<FieldOverride>& overrides);

// `loaded` with the overrides applied to its written scenario, defaults
// applied again and validated; a problem names the override ("--set PATH").
LoadedScenario with_overrides(const LoadedScenario& loaded, const std::vector<FieldOverride>& overrides);

}  // namespace ragged::scenarios
