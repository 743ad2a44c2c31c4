#pragma once
// A position in a text that knows its line and column: the common part of
// the JSON and text-format field locators.

#include <cstddef>
#include <string_view>

#include "scenarios/field_locations.hpp"

namespace ragged::scenarios {

class TextCursor {
 protected:
  explicit TextCursor(std::string_view text) : text_(text) {}

  FieldLocation here() const { return FieldLocation{line_, column_}; }

  void advance() {
    if (pos_ < text_.size() && text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace ragged::scenarios
