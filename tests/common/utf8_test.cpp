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

TEST(Utf8, CharactersThatSteerATerminalAreFound) {
  EXPECT_EQ(steering_character_at("plain, tabs\tand\nlines, caf\xc3\xa9"), std::nullopt);
  EXPECT_EQ(steering_character_at("red\x1b[31m"), 3u);             // ESC: a colour
  EXPECT_EQ(steering_character_at("bell\x07"), 4u);
  EXPECT_EQ(steering_character_at("over\rwrite"), 4u);             // a carriage return rewrites the line
  EXPECT_EQ(steering_character_at("del\x7f"), 3u);
  EXPECT_EQ(steering_character_at("c1 \xc2\x9b"), 3u);             // U+009B, the one-byte CSI
  EXPECT_EQ(steering_character_at("ab\xe2\x80\xae" "cd"), 2u);         // U+202E, right-to-left override
  EXPECT_EQ(steering_character_at("ab\xe2\x81\xa6" "cd"), 2u);         // U+2066, an isolate
  EXPECT_EQ(steering_character_at("\xff\x1b"), std::nullopt);      // not UTF-8: invalid_utf8_at says so first
}

TEST(Utf8, PrintableEscapesWhatWouldNotPrint) {
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable("t\tn\n"), "t\\x09n\\x0a");
  EXPECT_EQ(printable("bad\xff\xc3"), "bad\\xff\\xc3");              // bytes that are not UTF-8, one by one
  EXPECT_EQ(printable("\xc2\x9b\xe2\x80\xae"), "\\u009b\\u202e");
  const std::string all_bytes = [] {
    std::string text;
    for (int b = 0; b < 256; ++b) text += static_cast<char>(b);
    return text;
  }();
  const std::string shown = printable(all_bytes);
  EXPECT_EQ(invalid_utf8_at(shown), std::nullopt);
  EXPECT_EQ(steering_character_at(shown), std::nullopt);
  EXPECT_EQ(shown.find('\n'), std::string::npos);
}

TEST(Utf8, SteeringCharactersBecomeSpaces) {
  EXPECT_EQ(steering_as_spaces("a\x1b[31mb\tc\nd\re\xc2\x9b" "f\xe2\x80\xae" "g caf\xc3\xa9"), "a [31mb\tc\nd e f g caf\xc3\xa9");
  EXPECT_EQ(steering_as_spaces("bad\xff\x07"), "bad\xff ");
}

TEST(Utf8, PrintableCharacterMovesPastOneCharacter) {
  const std::string text = "\xe2\x82\xac\x1b\xff";
  size_t at = 0;
  EXPECT_EQ(printable_character(text, at), "\xe2\x82\xac");
  EXPECT_EQ(at, 3u);
  EXPECT_EQ(printable_character(text, at), "\\x1b");
  EXPECT_EQ(printable_character(text, at), "\\xff");
  EXPECT_EQ(at, text.size());
}

}  // namespace
}  // namespace ragged
