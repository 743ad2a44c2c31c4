#pragma once
// Whole-file reads with limits, and writes that never leave a half-written
// file. Inputs are regular files no larger than a cap (a FIFO with no writer,
// /dev/zero or /dev/urandom is refused at once, never read forever). Outputs
// go through a temporary file beside the target, created with the mode the
// umask gives (or the replaced file's), fsynced, renamed into place, and the
// directory fsynced; an existing target that is not a regular file (a FIFO,
// a character device, /dev/stdout) is written in place, never replaced (a
// FIFO that no process reads is refused, not waited on forever). The
// temporary is removed on every error and on SIGINT, SIGTERM and SIGHUP.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ragged {

// Scenarios, model configs, calibration files: 16 MiB.
inline constexpr int64_t kMaxInputBytes = int64_t{16} << 20;
// Traces: protobuf's own limit on one message, 2 GiB - 1.
inline constexpr int64_t kMaxTraceBytes = (int64_t{2} << 30) - 1;

// Reads a whole regular file of at most `max_bytes`; throws InputError
// naming the path and the reason (not a regular file, too large, I/O error).
std::string read_file(const std::filesystem::path& path, int64_t max_bytes = kMaxInputBytes);

// Throws the InputError write_file_atomically would for a target it cannot
// write at all (its folder missing or not writable, a directory, a name over
// the file-name limit), so that a command refuses before its work (a
// simulation, a search of minutes) rather than after it. Writes nothing.
void check_output_target(const std::filesystem::path& path);

// Writes `contents` to `path` as described above. Throws InputError on
// failure, leaving any previous file at `path` untouched.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace ragged
