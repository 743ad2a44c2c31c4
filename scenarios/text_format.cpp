#include "scenarios/text_format.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"

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

}  // namespace

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
