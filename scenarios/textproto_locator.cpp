// Records where every field of a protobuf text-format document is written.
// Occurrence k of a field name inside one message is recorded as "name[k]"
// ("name" for the first: FieldLocations folds [0] away), since the scanner
// does not know which fields are repeated: one path per occurrence, so the
// work is linear in the text. Tolerant: syntax errors are protobuf's to
// report; nesting deeper than kMaxNesting is refused.

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "scenarios/field_locations.hpp"
#include "scenarios/text_cursor.hpp"

namespace ragged::scenarios {
namespace {

struct Message {
  std::string path;                 // "a.b", "a.b[2]"; empty at the top
  std::map<std::string, int> seen;  // occurrences of each field name so far
};

class TextprotoScanner : public TextCursor {
 public:
  TextprotoScanner(std::string_view text, std::string_view origin) : TextCursor(text), origin_(origin) {}

  FieldLocations scan() {
    stack_.push_back(Message{});
    while (skip_space(), pos_ < text_.size()) step();
    return std::move(locations_);
  }

 private:
  void step() {
    char c = text_[pos_];
    if (c == '}' || c == '>') {
      if (stack_.size() > 1) stack_.pop_back();
      advance();
    } else if (c == '{' || c == '<') {
      if (static_cast<int>(stack_.size()) > kMaxNesting) throw_too_deep(origin_, here());
      stack_.push_back(Message{last_path_, {}});
      advance();
    } else if (c == '[') {
      skip_list();
    } else if (c == '"' || c == '\'') {
      skip_string(c);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const FieldLocation start = here();
      std::string word = read_word();
      skip_space();
      bool is_field = pos_ < text_.size() && (text_[pos_] == ':' || text_[pos_] == '{' || text_[pos_] == '<');
      if (is_field) record(word, start);
    } else {
      advance();
    }
  }

  void record(const std::string& name, FieldLocation start) {
    Message& message = stack_.back();
    const int index = message.seen[name]++;
    last_path_ = (message.path.empty() ? name : message.path + "." + name) +
                 (index == 0 ? "" : "[" + std::to_string(index) + "]");
    locations_.add(last_path_, start);
  }

  // A list value "[a, b]" or "[{...}, {...}]": message elements nest as name[i].
  void skip_list() {
    // The field's path without an occurrence index: its elements are numbered.
    const std::string list_path =
        !last_path_.empty() && last_path_.back() == ']' ? last_path_.substr(0, last_path_.rfind('[')) : last_path_;
    int index = 0;
    advance();
    while (skip_space(), pos_ < text_.size() && text_[pos_] != ']') {
      char c = text_[pos_];
      if (c == ',') {
        ++index;
        advance();
      } else if (c == '{' || c == '<') {
        last_path_ = list_path + "[" + std::to_string(index) + "]";
        locations_.add(last_path_, here());
        size_t depth = stack_.size();
        step();
        while (skip_space(), pos_ < text_.size() && stack_.size() > depth) step();
      } else if (c == '"' || c == '\'') {
        skip_string(c);
      } else {
        advance();
      }
    }
    advance();
  }

  std::string read_word() {
    std::string word;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      word.push_back(text_[pos_]);
      advance();
    }
    return word;
  }

  void skip_string(char quote) {
    advance();
    while (pos_ < text_.size() && text_[pos_] != quote && text_[pos_] != '\n') {
      if (text_[pos_] == '\\') advance();
      advance();
    }
    advance();
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (std::isspace(static_cast<unsigned char>(c)) || c == ';') {
        advance();
      } else {
        return;
      }
    }
  }

  std::vector<Message> stack_;
  std::string last_path_;  // the path of the field just read
  std::string_view origin_;
  FieldLocations locations_;
};

}  // namespace

FieldLocations locate_textproto_fields(std::string_view text, std::string_view origin) {
  return TextprotoScanner(text, origin).scan();
}

}  // namespace ragged::scenarios
