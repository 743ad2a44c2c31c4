#include "scenarios/scenario_override.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "common/edit_distance.hpp"
#include "common/errors.hpp"

namespace ragged::scenarios {
namespace {

namespace pb = google::protobuf;

// A field sharing the first four letters of `name`, else the one nearest by edit distance.
std::string closest_field(const pb::Descriptor& type, std::string_view name) {
  std::string best;
  size_t best_distance = std::string_view::npos;
  for (int i = 0; i < type.field_count(); ++i) {
    const std::string& candidate = type.field(i)->name();
    const size_t distance = std::string_view(candidate).starts_with(name.substr(0, 4)) ? 0 : edit_distance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

// What a value of `field` looks like: the enum's names, or its type.
std::string expected_form(const pb::FieldDescriptor& field) {
  if (const pb::EnumDescriptor* values = field.enum_type()) {
    std::string names;
    for (int i = 0; i < values->value_count(); ++i) names += (i ? ", " : "") + values->value(i)->name();
    return "one of " + names;
  }
  if (field.message_type() != nullptr) return "a message, { field: value ... }";
  return std::string("a value of type ") + field.type_name();
}

// The field `name` of `type`, or an InputError naming the path so far and the closest field.
const pb::FieldDescriptor& find_field(const pb::Descriptor& type, std::string_view name, std::string_view path) {
  if (const pb::FieldDescriptor* field = type.FindFieldByName(std::string(name))) return *field;
  throw InputError(fmt::format("--set {}: '{}' is not a field of {}; did you mean '{}'?", path, name, type.name(),
                               closest_field(type, name)));
}

// An enum value named in any case (`full`, `Full`) as the enum spells it
// (`FULL`), as the command line's own enum options take it; other text as given.
std::string canonical_value(const pb::FieldDescriptor& field, const std::string& value) {
  const pb::EnumDescriptor* values = field.enum_type();
  if (values == nullptr) return value;
  for (int i = 0; i < values->value_count(); ++i) {
    const std::string& name = values->value(i)->name();
    if (name.size() == value.size() &&
        std::equal(name.begin(), name.end(), value.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == std::toupper(static_cast<unsigned char>(b));
        })) {
      return name;
    }
  }
  return value;
}

void apply_one(Scenario& scenario, const FieldOverride& o) {
  pb::Message* message = &scenario;
  std::string_view rest = o.path;
  while (true) {
    const size_t dot = rest.find('.');
    const std::string_view name = rest.substr(0, dot);
    const pb::FieldDescriptor& field = find_field(*message->GetDescriptor(), name, o.path);
    if (field.is_repeated()) {
      throw InputError(fmt::format("--set {}: '{}' is a list; --set sets single fields, edit the scenario file for lists",
                                   o.path, name));
    }
    if (dot == std::string_view::npos) {
      const pb::Reflection& reflection = *message->GetReflection();
      reflection.ClearField(message, &field);
      if (!pb::TextFormat::ParseFieldValueFromString(canonical_value(field, o.value), &field, message)) {
        throw InputError(fmt::format("--set {}={}: '{}' does not read as {} (written as in a scenario file)", o.path,
                                     o.value, o.value, expected_form(field)));
      }
      return;
    }
    if (field.message_type() == nullptr) {
      throw InputError(fmt::format("--set {}: '{}' is of type {}, it has no field '{}'", o.path, name, field.type_name(),
                                   rest.substr(dot + 1)));
    }
    message = message->GetReflection()->MutableMessage(message, &field);
    rest = rest.substr(dot + 1);
  }
}

}  // namespace

FieldOverride parse_override(std::string_view spec) {
  const size_t equals = spec.find('=');
  if (equals == std::string_view::npos || equals == 0 || equals + 1 == spec.size()) {
    throw InputError(fmt::format("--set '{}': expected FIELD=VALUE, e.g. training.prefetch_depth=0", spec));
  }
  return {std::string(spec.substr(0, equals)), std::string(spec.substr(equals + 1))};
}

void apply_overrides(Scenario& scenario, const std::vector<FieldOverride>& overrides) {
  for (const FieldOverride& o : overrides) apply_one(scenario, o);
}

void check_overrides(const std::vector<FieldOverride>& overrides) {
  Scenario probe;
  apply_overrides(probe, overrides);
}

std::vector<FieldOverride> parse_overrides(const std::vector<std::string>& specs) {
  std::vector<FieldOverride> overrides;
  for (const std::string& spec : specs) overrides.push_back(parse_override(spec));
  check_overrides(overrides);
  return overrides;
}

LoadedScenario with_overrides(const LoadedScenario& loaded, const std::vector<FieldOverride>& overrides) {
  if (overrides.empty()) return loaded;
  LoadedScenario out = loaded;
  apply_overrides(out.written, overrides);
  for (const FieldOverride& o : overrides) out.origin += fmt::format(" --set {}={}", o.path, o.value);
  out.locations = {};  // the file's lines no longer describe every field
  return rebuild(std::move(out));
}

}  // namespace ragged::scenarios
