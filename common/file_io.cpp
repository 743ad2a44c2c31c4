#include "common/file_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Writes all of `data` to `fd`, retrying short writes.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(fmt::format("cannot read '{}': it is a directory, expected a file", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(fmt::format("cannot read '{}': {}", path.string(), errno_text()));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("cannot read '{}': read failed", path.string()));
  return buffer.str();
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::string tmp_template = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(tmp_template.data());
  if (fd < 0) {
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), errno_text()));
  }
  bool ok = write_all(fd, contents) && ::fsync(fd) == 0;
  std::string reason = ok ? "" : errno_text();
  if (::close(fd) != 0 && ok) {
    ok = false;
    reason = errno_text();
  }
  if (ok && ::rename(tmp_template.c_str(), path.c_str()) != 0) {
    ok = false;
    reason = errno_text();
  }
  if (!ok) {
    ::unlink(tmp_template.c_str());
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), reason));
  }
}

}  // namespace ragged
