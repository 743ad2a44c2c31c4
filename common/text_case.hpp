#pragma once
// ASCII case folding for names typed by users or spelled by enums ("FULL",
// "B200", "BF16"): one helper instead of a lambda in every file.

#include <cctype>
#include <string>
#include <string_view>

namespace ragged {

inline std::string lower_case(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace ragged
