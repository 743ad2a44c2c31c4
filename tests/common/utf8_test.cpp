// UTF-8 validity (RFC 3629): what a protobuf string field may hold.

#include <gtest/gtest.h>

#include <string>

#include "common/utf8.hpp"

namespace ragged {
namespace {

TEST(Utf8, ValidTextHasNoInvalidByte) {
  for (const std::string text : {"", "plain ascii", "caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x98\x80",
                                 "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_EQ(invalid_utf8_at(text), std::nullopt) << text;
  }
}

TEST(Utf8, TheFirstInvalidByteIsNamed) {
  EXPECT_EQ(invalid_utf8_at("bad\xffname"), 3u);         // never in UTF-8
  EXPECT_EQ(invalid_utf8_at("ab\xc3"), 2u);              // cut short
  EXPECT_EQ(invalid_utf8_at("\xc3\x28"), 1u);            // not a continuation byte
  EXPECT_EQ(invalid_utf8_at("\xc0\xaf"), 0u);            // overlong '/'
  EXPECT_EQ(invalid_utf8_at("\xe0\x80\xaf"), 1u);        // overlong, three bytes
  EXPECT_EQ(invalid_utf8_at("\xed\xa0\x80"), 1u);        // a UTF-16 surrogate
  EXPECT_EQ(invalid_utf8_at("\xf4\x90\x80\x80"), 1u);    // above U+10FFFF
  EXPECT_EQ(invalid_utf8_at("ok \xe2\x82"), 3u);         // a three-byte sequence cut at the end
}

}  // namespace
}  // namespace ragged
