#include "scenarios/text_format.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <regex>
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
std::string explain_text_error(const std::string& message) {
  if (message.ends_with("got: ")) return message + "end of file (is a closing '}' missing?)";
  static const std::regex unknown_field(R"re(Message type "([\w.]+)" has no field named "(\w+)")re");
  std::smatch match;
  if (!std::regex_search(message, match, unknown_field)) return message;
  const pb::Descriptor* type = pb::DescriptorPool::generated_pool()->FindMessageTypeByName(match[1]);
  if (type == nullptr) return message;
  std::vector<std::string> fields;
  for (int i = 0; i < type->field_count(); ++i) fields.push_back(type->field(i)->name());
  return fmt::format("unknown field '{}'; {} has: {}", match[2].str(), type->name(), fmt::join(fields, ", "));
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
