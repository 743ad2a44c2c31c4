// Records where every key of a JSON document is written. Tolerant by design:
// syntax errors are left for protobuf's parser to report.

#include <string>
#include <vector>

#include "scenarios/field_locations.hpp"
#include "scenarios/text_cursor.hpp"

namespace ragged::scenarios {
namespace {

struct Container {
  bool is_array = false;
  std::string path;     // path of the object, or of the array's field
  int index = 0;        // arrays: index of the current element
  bool expect_key = true;  // objects: the next string is a key
};

class JsonScanner : public TextCursor {
 public:
  JsonScanner(std::string_view text, std::string_view origin) : TextCursor(text), origin_(origin) {}

  FieldLocations scan() {
    while (pos_ < text_.size()) step();
    return std::move(locations_);
  }

 private:
  void step() {
    char c = text_[pos_];
    const FieldLocation start = here();
    switch (c) {
      case '{': open(false); break;
      case '[': open(true); break;
      case '}':
      case ']':
        if (!stack_.empty()) stack_.pop_back();
        break;
      case ',':
        if (!stack_.empty()) {
          if (stack_.back().is_array) ++stack_.back().index;
          else stack_.back().expect_key = true;
        }
        break;
      case ':':
        if (!stack_.empty()) stack_.back().expect_key = false;
        break;
      case '"': {
        std::string value = read_string();
        if (!stack_.empty() && !stack_.back().is_array && stack_.back().expect_key) {
          pending_key_ = join(stack_.back().path, to_snake_case(value));
          locations_.add(pending_key_, start);
        }
        return;  // read_string advanced past the closing quote
      }
      default: break;
    }
    advance();
  }

  void open(bool is_array) {
    if (static_cast<int>(stack_.size()) >= kMaxNesting) throw_too_deep(origin_, here());
    std::string path;
    if (!stack_.empty() && stack_.back().is_array) {
      path = stack_.back().path + "[" + std::to_string(stack_.back().index) + "]";
      locations_.add(path, here());
    } else if (!stack_.empty()) {
      path = pending_key_;
    }
    stack_.push_back(Container{is_array, path, 0, true});
  }

  std::string read_string() {
    std::string out;
    advance();  // opening quote
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) advance();
      out.push_back(text_[pos_]);
      advance();
    }
    advance();  // closing quote
    return out;
  }

  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }

  std::vector<Container> stack_;
  std::string pending_key_;
  FieldLocations locations_;
  std::string_view origin_;
};

}  // namespace

FieldLocations locate_json_fields(std::string_view text, std::string_view origin) {
  return JsonScanner(text, origin).scan();
}

}  // namespace ragged::scenarios
