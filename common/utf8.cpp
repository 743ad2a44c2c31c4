#include "common/utf8.hpp"

#include <fmt/format.h>

namespace ragged {

namespace {

// The length of the UTF-8 sequence at `at`, or 0 with `bad` set to the
// offset of its first wrong byte.
size_t sequence_length(std::string_view text, size_t at, size_t& bad) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(at);
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
  else return bad = at, 0;
  if (at + length > text.size()) return bad = at, 0;
  for (size_t k = 1; k < length; ++k) {
    const unsigned char b = byte(at + k);
    if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xBF)) return bad = at + k, 0;
  }
  return length;
}

char32_t code_point(std::string_view sequence) {
  const auto byte = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(sequence[k])); };
  switch (sequence.size()) {
    case 1: return byte(0);
    case 2: return (byte(0) & 0x1F) << 6 | (byte(1) & 0x3F);
    case 3: return (byte(0) & 0x0F) << 12 | (byte(1) & 0x3F) << 6 | (byte(2) & 0x3F);
    default: return (byte(0) & 0x07) << 18 | (byte(1) & 0x3F) << 12 | (byte(2) & 0x3F) << 6 | (byte(3) & 0x3F);
  }
}

bool steers(char32_t c) {
  return (c < 0x20 && c != '\t' && c != '\n') || (c >= 0x7F && c <= 0x9F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

}  // namespace

std::optional<size_t> invalid_utf8_at(std::string_view text) {
  for (size_t i = 0, bad = 0; i < text.size();) {
    const size_t length = sequence_length(text, i, bad);
    if (length == 0) return bad;
    i += length;
  }
  return std::nullopt;
}

std::optional<size_t> steering_character_at(std::string_view text) {
  for (size_t i = 0, bad = 0; i < text.size();) {
    const size_t length = sequence_length(text, i, bad);
    if (length == 0) return std::nullopt;  // not UTF-8: invalid_utf8_at's to say
    if (steers(code_point(text.substr(i, length)))) return i;
    i += length;
  }
  return std::nullopt;
}

std::string steering_as_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0, bad = 0; i < text.size();) {
    const size_t length = sequence_length(text, i, bad);
    if (length == 0) {
      out += text[i++];  // not UTF-8: kept for invalid_utf8_at to name
      continue;
    }
    const std::string_view character = text.substr(i, length);
    if (steers(code_point(character))) {
      out += ' ';
    } else {
      out += character;
    }
    i += length;
  }
  return out;
}

std::string printable_character(std::string_view text, size_t& at) {
  size_t bad = 0;
  const size_t length = sequence_length(text, at, bad);
  if (length == 0) return fmt::format("\\x{:02x}", static_cast<unsigned char>(text[at++]));
  const std::string_view sequence = text.substr(at, length);
  at += length;
  const char32_t c = code_point(sequence);
  if (c == '\t' || c == '\n' || steers(c)) {
    return c < 0x80 ? fmt::format("\\x{:02x}", static_cast<unsigned>(c)) : fmt::format("\\u{:04x}", static_cast<unsigned>(c));
  }
  return std::string(sequence);
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) out += printable_character(text, at);
  return out;
}

}  // namespace ragged
