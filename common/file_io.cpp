#include "common/file_io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <ctime>
#include <mutex>
#include <utility>

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

std::string_view file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// A file descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Temporary files being written, removed by a signal handler if the process
// is interrupted (unlink is async-signal-safe); a fixed table, no allocation.
constexpr int kMaxTemporaries = 16;
struct Temporaries {
  std::array<std::array<char, PATH_MAX>, kMaxTemporaries> paths{};
  std::array<std::atomic<bool>, kMaxTemporaries> used{};
  std::array<struct sigaction, 3> previous{};
};
Temporaries g_temporaries;
constexpr std::array<int, 3> kInterrupts = {SIGINT, SIGTERM, SIGHUP};

void remove_temporaries(int signal) {
  for (int i = 0; i < kMaxTemporaries; ++i) {
    if (g_temporaries.used[static_cast<size_t>(i)].load(std::memory_order_acquire)) {
      ::unlink(g_temporaries.paths[static_cast<size_t>(i)].data());
    }
  }
  for (size_t i = 0; i < kInterrupts.size(); ++i) {
    if (kInterrupts[i] == signal) sigaction(signal, &g_temporaries.previous[i], nullptr);
  }
  std::raise(signal);
}

void install_interrupt_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (size_t i = 0; i < kInterrupts.size(); ++i) {
      struct sigaction action {};
      action.sa_handler = remove_temporaries;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESETHAND;
      sigaction(kInterrupts[i], &action, &g_temporaries.previous[i]);
    }
  });
}

// Registers a temporary's path for removal on interrupt while in scope.
class TemporaryGuard {
 public:
  explicit TemporaryGuard(const std::string& path) {
    install_interrupt_handlers();
    if (path.size() >= PATH_MAX) return;
    for (int i = 0; i < kMaxTemporaries; ++i) {
      bool expected = false;
      auto& used = g_temporaries.used[static_cast<size_t>(i)];
      if (used.load(std::memory_order_relaxed)) continue;
      auto& slot = g_temporaries.paths[static_cast<size_t>(i)];
      std::memcpy(slot.data(), path.c_str(), path.size() + 1);
      if (used.compare_exchange_strong(expected, true, std::memory_order_release)) {
        slot_ = i;
        return;
      }
    }
  }
  ~TemporaryGuard() {
    if (slot_ >= 0) g_temporaries.used[static_cast<size_t>(slot_)].store(false, std::memory_order_release);
  }
  TemporaryGuard(const TemporaryGuard&) = delete;
  TemporaryGuard& operator=(const TemporaryGuard&) = delete;

 private:
  int slot_ = -1;
};

// The mode a new file gets from open(..., 0666): the process's umask applied.
mode_t default_file_mode() {
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}

// Writes to an existing non-regular target (FIFO, device, terminal) in
// place. Opened non-blocking: a FIFO that no process reads is refused at
// once (a plain open waited for a reader forever); the writes then block as
// the reader takes the data.
void write_in_place(const std::filesystem::path& path, std::string_view contents) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0 && errno == ENXIO) {
    throw InputError(fmt::format("cannot write '{}': it is a FIFO that no process reads; start its reader first "
                                 "(e.g. 'cat {} &') or give a file",
                                 path.string(), path.string()));
  }
  if (fd.get() < 0) throw InputError(fmt::format("cannot write '{}': {}", path.string(), errno_text()));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), errno_text()));
  }
  if (!write_all(fd.get(), contents)) throw InputError(fmt::format("cannot write '{}': {}", path.string(), errno_text()));
}

// ".NAME.tmp.XXXXXX" beside the target, NAME cut short where the whole
// would pass the directory's file-name limit (a target near the limit is
// still written).
std::string temporary_name(const std::filesystem::path& dir, const std::string& name) {
  const std::string_view suffix = ".tmp.XXXXXX";
  const long limit = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  const size_t most = limit > 0 ? static_cast<size_t>(limit) : NAME_MAX;
  const size_t room = most > suffix.size() + 1 ? most - suffix.size() - 1 : 0;
  return "." + name.substr(0, room) + std::string(suffix);
}

// Temporaries of `prefix` (temporary_name's, before its random part) that
// a killed writer left beside the target: a writer holds an exclusive
// advisory lock on its temporary while it writes (the kernel drops it when
// the writer dies), so one that can be locked now is abandoned. A temporary
// younger than a minute is left alone: its writer may not have locked it yet.
void remove_abandoned_temporaries(const std::filesystem::path& dir, const std::string& prefix) {
  constexpr time_t kYoungSeconds = 60;
  const time_t now = ::time(nullptr);
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != prefix.size() + 6 || !name.starts_with(prefix)) continue;
    Fd fd(::open(it->path().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (now - st.st_mtime < kYoungSeconds) continue;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) ::unlink(it->path().c_str());
  }
}

void sync_directory(const std::filesystem::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) ::fsync(fd.get());  // best effort: some filesystems refuse fsync on directories
}

}  // namespace

std::string read_file(const std::filesystem::path& path, int64_t max_bytes) {
  // Non-blocking so that opening a FIFO with no writer returns at once.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(fmt::format("cannot read '{}': {}", path.string(), errno_text()));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw InputError(fmt::format("cannot read '{}': {}", path.string(), errno_text()));
  if (!S_ISREG(st.st_mode)) {
    throw InputError(fmt::format("cannot read '{}': it is {}; give a regular file", path.string(), file_kind(st.st_mode)));
  }
  if (st.st_size > max_bytes) {
    throw InputError(fmt::format("cannot read '{}': {} bytes is over the limit of {} bytes for this input",
                                 path.string(), static_cast<int64_t>(st.st_size), max_bytes));
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t filled = 0;
  while (filled < data.size()) {
    const ssize_t n = ::read(fd.get(), data.data() + filled, data.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("cannot read '{}': {}", path.string(), errno_text()));
    if (n == 0) break;  // shrank while read
    filled += static_cast<size_t>(n);
  }
  data.resize(filled);
  return data;
}

namespace {

// Where write_file_atomically puts `path`'s contents: the file itself, or,
// for a symbolic link to a regular file, the file it names (the link kept);
// and the folder of its temporary.
struct WriteTarget {
  std::filesystem::path final_path;
  std::filesystem::path dir;
};

WriteTarget write_target(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::is_symlink(path, ec) ? std::filesystem::canonical(path, ec) : path;
  WriteTarget t{ec ? path : target, {}};
  t.dir = t.final_path.parent_path().empty() ? "." : t.final_path.parent_path();
  return t;
}

// The stat of an existing target; refuses a directory.
bool stat_target(const std::filesystem::path& path, struct stat& existing) {
  const bool exists = ::stat(path.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode)) {
    throw InputError(fmt::format("cannot write '{}': it is a directory; give a file name", path.string()));
  }
  return exists;
}

}  // namespace

void check_output_target(const std::filesystem::path& path) {
  struct stat existing {};
  if (stat_target(path, existing) && !S_ISREG(existing.st_mode)) {
    if (::access(path.c_str(), W_OK) != 0) throw InputError(fmt::format("cannot write '{}': {}", path.string(), errno_text()));
    return;  // a FIFO's reader may start later: its absence is said at the write
  }
  const WriteTarget t = write_target(path);
  const long limit = ::pathconf(t.dir.c_str(), _PC_NAME_MAX);
  if (limit > 0 && t.final_path.filename().string().size() > static_cast<size_t>(limit)) {
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(ENAMETOOLONG)));
  }
  // The write's own first step, undone: the folder exists, is writable, has room for a name.
  std::string tmp = (t.dir / temporary_name(t.dir, t.final_path.filename().string())).string();
  Fd fd(::mkstemp(tmp.data()));
  if (fd.get() < 0) throw InputError(fmt::format("cannot write '{}': {}", path.string(), errno_text()));
  ::unlink(tmp.c_str());
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  struct stat existing {};
  const bool exists = stat_target(path, existing);
  if (exists && !S_ISREG(existing.st_mode)) {
    write_in_place(path, contents);
    return;
  }
  const WriteTarget t = write_target(path);
  const std::filesystem::path& final_path = t.final_path;
  const std::filesystem::path& dir = t.dir;
  const std::string pattern = temporary_name(dir, final_path.filename().string());
  remove_abandoned_temporaries(dir, pattern.substr(0, pattern.size() - 6));
  std::string tmp = (dir / pattern).string();
  Fd fd(::mkstemp(tmp.data()));
  if (fd.get() < 0) throw InputError(fmt::format("cannot write '{}': {}", path.string(), errno_text()));
  ::flock(fd.get(), LOCK_EX | LOCK_NB);  // ours while we write: not abandoned (best effort: some filesystems refuse)
  const TemporaryGuard named(tmp);
  const mode_t mode = exists ? static_cast<mode_t>(existing.st_mode & 07777) : default_file_mode();
  bool ok = ::fchmod(fd.get(), mode) == 0 && write_all(fd.get(), contents) && ::fsync(fd.get()) == 0;
  std::string reason = ok ? "" : errno_text();
  if (::close(fd.release()) != 0 && ok) {
    ok = false;
    reason = errno_text();
  }
  if (ok && ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    ok = false;
    reason = errno_text();
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), reason));
  }
  sync_directory(dir);
}

}  // namespace ragged
