#pragma once
// EXPECT_CONTAINS(haystack, needle): the text holds the needle; on failure
// GoogleTest prints the whole text, where the message a test expects lives.

#include <gtest/gtest.h>

#include <string>

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)
