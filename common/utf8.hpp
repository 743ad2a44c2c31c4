#pragma once
// UTF-8 validity of text read from input files: protobuf's text and JSON
// parsers let an invalid byte into a string field, which its binary
// serializer then refuses (a simulation's trace would not parse back). And
// text from an input as it may be shown: a file can hold bytes that steer
// the terminal (ESC starts a colour, a title, a screen clear) or turn the
// line's direction, which an echoed name must not carry to the reader.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ragged {

// The offset of the first byte that does not continue valid UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF); nullopt when the
// whole text is valid.
std::optional<size_t> invalid_utf8_at(std::string_view text);

// The offset of the first character of valid UTF-8 `text` that would steer a
// terminal rather than print: a C0 control other than tab and line feed, DEL,
// a C1 control (U+0080-U+009F), a bidirectional override or isolate
// (U+202A-U+202E, U+2066-U+2069); nullopt when there is none.
std::optional<size_t> steering_character_at(std::string_view text);

// The character of `text` at `at` as it may be printed, and `at` moved past
// it: itself, or an escape for a byte that is not UTF-8 ("\xff"), a control
// ("\x1b", tab and line feed included) or a steering character ("\u202e").
std::string printable_character(std::string_view text, size_t& at);

// `text` with each steering character (as steering_character_at finds them)
// a space: free text read from one input and kept in another (a torchtitan
// job's description in the scenario it imports to). Bytes that are not
// UTF-8 stay: invalid_utf8_at refuses them where it matters.
std::string steering_as_spaces(std::string_view text);

// Every character of `text` as printable_character shows it: the result is
// valid UTF-8 with no control character.
std::string printable(std::string_view text);

}  // namespace ragged
