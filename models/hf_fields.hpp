#pragma once
// Internal to models/: typed reads of the fields of one Hugging Face
// config.json object. Every error is an InputError on one line that names the
// origin (the file) and the field.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace ragged::models::detail {

class HfFields {
 public:
  // `prefix` names a nested object in messages ("attn_config.").
  HfFields(const nlohmann::json& object, std::string origin, std::string model_type, std::string prefix = "");

  const std::string& origin() const { return origin_; }
  const std::string& model_type() const { return model_type_; }

  // The field's value, or nullptr when it is absent or null.
  const nlohmann::json* find(std::string_view field) const;
  bool has(std::string_view field) const { return find(field) != nullptr; }

  // An integer field that must be present and at least `minimum`.
  int64_t require_int(std::string_view field, int64_t minimum) const;
  // An optional integer field (absent or null: `fallback`) that must be at least `minimum`.
  int64_t int_or(std::string_view field, int64_t fallback, int64_t minimum) const;
  bool bool_or(std::string_view field, bool fallback) const;
  std::string string_or(std::string_view field, std::string fallback) const;
  // An optional number, integer or not (absent or null: `fallback`).
  double number_or(std::string_view field, double fallback) const;

  // The same integer under any of several names (transformers accepts
  // aliases: n_embed for hidden_size); names that disagree are an error.
  int64_t require_int_of(std::initializer_list<std::string_view> names, int64_t minimum) const;
  int64_t int_or_of(std::initializer_list<std::string_view> names, int64_t fallback, int64_t minimum) const;

  // A nested object ("attn_config"), empty when absent or null.
  HfFields object(std::string_view field) const;

  // Throws InputError("<origin>: <message>").
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_type(std::string_view field, std::string_view expected, const nlohmann::json& value) const;

 private:
  int64_t to_int(std::string_view field, const nlohmann::json& value, int64_t minimum) const;
  std::string name(std::string_view field) const { return prefix_ + std::string(field); }
  // The first of `names` present, or "" when none is; fails when two disagree.
  std::string_view alias_present(std::initializer_list<std::string_view> names) const;

  const nlohmann::json& object_;
  std::string origin_;
  std::string model_type_;
  std::string prefix_;
};

}  // namespace ragged::models::detail
