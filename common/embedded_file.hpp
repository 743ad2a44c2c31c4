#pragma once
// A text file compiled into the binary (see cmake/EmbedFiles.cmake).

#include <string_view>
#include <vector>

namespace ragged {

struct EmbeddedFile {
  std::string_view name;      // file name without directory and extension
  std::string_view contents;
};

}  // namespace ragged
