#pragma once
// Whole-file reads and atomic writes. Writers never leave a half-written file:
// they write a temporary file beside the target and rename it into place.

#include <filesystem>
#include <string>
#include <string_view>

namespace ragged {

// Reads a whole file; throws InputError naming the path and the reason.
std::string read_file(const std::filesystem::path& path);

// Writes `contents` to `path` through a temporary file in the same directory,
// flushed and renamed over the target. Throws InputError on failure, leaving
// any previous file at `path` untouched.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace ragged
