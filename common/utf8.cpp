#include "common/utf8.hpp"

namespace ragged {

std::optional<size_t> invalid_utf8_at(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead < 0x80) length = 1;
    else if (lead >= 0xC2 && lead <= 0xDF) length = 2;
    else if (lead == 0xE0) length = 3, low = 0xA0;               // no overlong forms
    else if (lead >= 0xE1 && lead <= 0xEC) length = 3;
    else if (lead == 0xED) length = 3, high = 0x9F;              // no surrogates
    else if (lead >= 0xEE && lead <= 0xEF) length = 3;
    else if (lead == 0xF0) length = 4, low = 0x90;               // no overlong forms
    else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
    else if (lead == 0xF4) length = 4, high = 0x8F;              // nothing above U+10FFFF
    else return i;
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const unsigned char b = byte(i + k);
      if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xBF)) return i + k;
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace ragged
