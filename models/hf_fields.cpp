#include "models/hf_fields.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/checked_math.hpp"
#include "common/errors.hpp"

namespace ragged::models::detail {
namespace {

// A short rendering of a JSON value for error messages.
std::string describe(const nlohmann::json& value) {
  std::string text = value.dump();
  constexpr size_t kMaxChars = 40;
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return fmt::format("{} {}", value.type_name(), text);
}

}  // namespace

HfFields::HfFields(const nlohmann::json& object, std::string origin, std::string model_type, std::string prefix)
    : object_(object), origin_(std::move(origin)), model_type_(std::move(model_type)), prefix_(std::move(prefix)) {}

const nlohmann::json* HfFields::find(std::string_view field) const {
  auto it = object_.find(field);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t HfFields::to_int(std::string_view field, const nlohmann::json& value, int64_t minimum) const {
  if (!value.is_number_integer()) fail_type(field, "an integer", value);
  // Beyond 2^53 no count is exact; validate_arch then applies each field's own limit.
  if ((value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(kMaxExactCount)) ||
      (!value.is_number_unsigned() && value.get<int64_t>() > kMaxExactCount)) {
    fail(fmt::format("field '{}' is too large (got {}); docs/RELIABILITY.md lists the limits", name(field),
                     describe(value)));
  }
  const int64_t number = value.get<int64_t>();
  if (number < minimum) fail(fmt::format("field '{}' must be >= {} (got {})", name(field), minimum, number));
  return number;
}

int64_t HfFields::require_int(std::string_view field, int64_t minimum) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) {
    fail(fmt::format("missing field '{}' (required for model_type {})", name(field), model_type_));
  }
  return to_int(field, *value, minimum);
}

int64_t HfFields::int_or(std::string_view field, int64_t fallback, int64_t minimum) const {
  const nlohmann::json* value = find(field);
  return value == nullptr ? fallback : to_int(field, *value, minimum);
}

bool HfFields::bool_or(std::string_view field, bool fallback) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) fail_type(field, "true or false", *value);
  return value->get<bool>();
}

std::string HfFields::string_or(std::string_view field, std::string fallback) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) return fallback;
  if (!value->is_string()) fail_type(field, "a string", *value);
  return value->get<std::string>();
}

double HfFields::number_or(std::string_view field, double fallback) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr) return fallback;
  if (!value->is_number()) fail_type(field, "a number", *value);
  const double number = value->get<double>();
  if (!std::isfinite(number) || std::fabs(number) > static_cast<double>(kMaxExactCount)) {
    fail(fmt::format("field '{}' must be a finite number of at most 2^53 (got {})", name(field), describe(*value)));
  }
  return number;
}

std::string_view HfFields::alias_present(std::initializer_list<std::string_view> names) const {
  std::string_view present;
  for (std::string_view field : names) {
    const nlohmann::json* value = find(field);
    if (value == nullptr) continue;
    if (present.empty()) {
      present = field;
    } else if (*value != *find(present)) {
      fail(fmt::format("fields '{}' ({}) and '{}' ({}) name the same setting but disagree; keep one", name(present),
                       find(present)->dump(), name(field), value->dump()));
    }
  }
  return present;
}

int64_t HfFields::require_int_of(std::initializer_list<std::string_view> names, int64_t minimum) const {
  const std::string_view present = alias_present(names);
  if (present.empty()) {
    std::string listed;
    for (std::string_view field : names) listed += (listed.empty() ? "'" : " or '") + name(field) + "'";
    fail(fmt::format("missing field {} (required for model_type {})", listed, model_type_));
  }
  return require_int(present, minimum);
}

int64_t HfFields::int_or_of(std::initializer_list<std::string_view> names, int64_t fallback, int64_t minimum) const {
  const std::string_view present = alias_present(names);
  return present.empty() ? fallback : require_int(present, minimum);
}

HfFields HfFields::object(std::string_view field) const {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* value = find(field);
  if (value == nullptr) return HfFields(kEmpty, origin_, model_type_, name(field) + ".");
  if (!value->is_object()) fail_type(field, "an object", *value);
  return HfFields(*value, origin_, model_type_, name(field) + ".");
}

void HfFields::fail(const std::string& message) const {
  throw InputError(fmt::format("{}: {}", origin_, message));
}

void HfFields::fail_type(std::string_view field, std::string_view expected, const nlohmann::json& value) const {
  fail(fmt::format("field '{}' must be {} (got {})", name(field), expected, describe(value)));
}

}  // namespace ragged::models::detail
