// Records where every field of a protobuf text-format document is written.
// Every occurrence k of a field name inside one message is recorded both as
// "name[k]" and, for the first, as "name", since the scanner does not know
// which fields are repeated. Tolerant: syntax errors are protobuf's to report.

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "scenarios/field_locations.hpp"
#include "scenarios/text_cursor.hpp"

namespace ragged::scenarios {
namespace {

struct Message {
  std::vector<std::string> paths;   // every path this message is known by ("a.b", "a.b[0]")
  std::map<std::string, int> seen;  // occurrences of each field name so far
};

class TextprotoScanner : public TextCursor {
 public:
  explicit TextprotoScanner(std::string_view text) : TextCursor(text) {}

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
      stack_.push_back(Message{last_paths_, {}});
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
    int index = message.seen[name]++;
    std::string suffix = "[" + std::to_string(index) + "]";
    last_paths_.clear();
    auto add = [&](const std::string& path) {
      locations_.add(path, start);
      last_paths_.push_back(path);
    };
    if (message.paths.empty()) message.paths.push_back("");
    for (const std::string& parent : message.paths) {
      std::string base = parent.empty() ? name : parent + "." + name;
      if (index == 0) add(base);
      add(base + suffix);
    }
  }

  // A list value "[a, b]" or "[{...}, {...}]": message elements nest as name[i].
  void skip_list() {
    std::vector<std::string> list_paths;
    for (const std::string& path : last_paths_) {
      if (path.empty() || path.back() != ']') list_paths.push_back(path);
    }
    int index = 0;
    advance();
    while (skip_space(), pos_ < text_.size() && text_[pos_] != ']') {
      char c = text_[pos_];
      if (c == ',') {
        ++index;
        advance();
      } else if (c == '{' || c == '<') {
        last_paths_.clear();
        for (const std::string& list_path : list_paths) {
          std::string element = list_path + "[" + std::to_string(index) + "]";
          locations_.add(element, here());
          last_paths_.push_back(element);
        }
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
  std::vector<std::string> last_paths_;  // paths of the field just read
  FieldLocations locations_;
};

}  // namespace

FieldLocations locate_textproto_fields(std::string_view text) { return TextprotoScanner(text).scan(); }

}  // namespace ragged::scenarios
