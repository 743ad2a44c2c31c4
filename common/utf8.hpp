#pragma once
// UTF-8 validity of text read from input files: protobuf's text and JSON
// parsers let an invalid byte into a string field, which its binary
// serializer then refuses (a simulation's trace would not parse back).

#include <cstddef>
#include <optional>
#include <string_view>

namespace ragged {

// The offset of the first byte that does not continue valid UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF); nullopt when the
// whole text is valid.
std::optional<size_t> invalid_utf8_at(std::string_view text);

}  // namespace ragged
