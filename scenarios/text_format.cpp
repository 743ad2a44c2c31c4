#include "scenarios/text_format.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "common/utf8.hpp"

namespace ragged::scenarios {
namespace {

namespace pb = google::protobuf;

// Keeps the first error protobuf's text parser reports, with its position.
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!has_error) {
      has_error = true;
      location = FieldLocation{line + 1, column + 1};
      text = message;
    }
  }
  void AddWarning(int, int, const std::string&) override {}

  bool has_error = false;
  FieldLocation location;
  std::string text;
};

// 'Message type "ragged.scenarios.Cluster" has no field named "nodez".' gains
// the list of fields that type does have.
// Read by hand, not with std::regex: its recursion overflowed the stack on a
// 30,000-character field name. The name is echoed shortened.
std::string explain_text_error(const std::string& message) {
  if (message.ends_with("got: ")) return message + "end of file (is a closing '}' missing?)";
  constexpr std::string_view kType = "Message type \"", kField = "\" has no field named \"";
  const size_t type_at = message.find(kType);
  if (type_at == std::string::npos) return clipped(message);
  const size_t type_begin = type_at + kType.size();
  const size_t type_end = message.find(kField, type_begin);
  if (type_end == std::string::npos) return clipped(message);
  const size_t field_begin = type_end + kField.size();
  const size_t field_end = message.find('"', field_begin);
  if (field_end == std::string::npos) return clipped(message);
  const pb::Descriptor* type =
      pb::DescriptorPool::generated_pool()->FindMessageTypeByName(message.substr(type_begin, type_end - type_begin));
  if (type == nullptr) return clipped(message);
  std::vector<std::string> fields;
  for (int i = 0; i < type->field_count(); ++i) fields.push_back(type->field(i)->name());
  return fmt::format("unknown field '{}'; {} has: {}", shortened(message.substr(field_begin, field_end - field_begin)),
                     type->name(), fmt::join(fields, ", "));
}

// The first string field of `message` (depth first) with a text problem, and its path.
std::optional<std::pair<std::string, std::string>> first_text_problem(const pb::Message& message,
                                                                      const std::string& prefix) {
  const pb::Reflection* r = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const std::string path = prefix.empty() ? field->name() : prefix + "." + field->name();
    const int count = field->is_repeated() ? r->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string at = field->is_repeated() ? fmt::format("{}[{}]", path, i) : path;
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& inner = field->is_repeated() ? r->GetRepeatedMessage(message, field, i) : r->GetMessage(message, field);
        if (auto problem = first_text_problem(inner, at)) return problem;
      } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        const std::string value = field->is_repeated() ? r->GetRepeatedString(message, field, i) : r->GetString(message, field);
        if (auto problem = text_field_problem(field->name(), value)) return std::make_pair(at, *problem);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> text_field_problem(std::string_view field_name, std::string_view value) {
  if (const auto at = invalid_utf8_at(value)) {
    return fmt::format("{} is not valid UTF-8 (byte {} of {}): write the text as UTF-8", field_name, *at + 1, value.size());
  }
  if (const auto steering = steering_character_at(value)) {
    // Every report prints the names: an ESC would colour or clear the reader's terminal.
    size_t character = *steering;
    return fmt::format("{} holds the control character {} (byte {} of {}): remove it; text fields hold printable "
                       "text, tabs and line breaks",
                       field_name, printable_character(value, character), *steering + 1, value.size());
  }
  return std::nullopt;
}

void check_text_fields(const google::protobuf::Message& message, const std::string& origin,
                       const FieldLocations& locations) {
  const auto problem = first_text_problem(message, "");
  if (!problem) return;
  const std::optional<FieldLocation> at = locations.find(problem->first);
  throw InputError(fmt::format("{}: {}: {}", at ? fmt::format("{}:{}:{}", origin, at->line, at->column) : origin,
                               problem->first, problem->second));
}

void parse_text_message(std::string_view text, const std::string& origin, const FieldLocations& locations,
                        google::protobuf::Message* message) {
  pb::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(std::string(text), message)) return;
  // Protobuf points just after the offending token, sometimes at the start
  // of the next line; the field written there is the one to name.
  FieldLocation at = errors.location;
  auto path = locations.path_at(at);
  bool about_a_field = errors.text.find("field") != std::string::npos;
  if (path && about_a_field) {
    FieldLocation field = *locations.find(*path);
    bool same_token = field.line == at.line || (at.column == 1 && field.line == at.line - 1);
    if (same_token) at = field;
    else path.reset();
  } else {
    path.reset();
  }
  throw InputError(fmt::format("{}:{}:{}: {}{}", origin, at.line, at.column, path ? *path + ": " : "",
                               explain_text_error(errors.text)));
}

}  // namespace ragged::scenarios
