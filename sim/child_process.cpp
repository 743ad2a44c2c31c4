#include "sim/child_process.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <exception>
#include <fstream>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::sim {
namespace {

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// This process's resident memory (/proc/self/statm), 0 where unreadable.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

std::string run_in_child(const std::function<std::string()>& work, ChildUsage* usage) {
  int fds[2];
  if (::pipe(fds) != 0) throw InternalError(fmt::format("pipe failed: {}", std::strerror(errno)));
  // The child inherits unflushed stdio buffers; anything in the child that
  // flushes them (SimGrid does) would print the parent's pending output again.
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw InternalError(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    // What the child holds before the work: the parent's pages it has
    // touched so far (the rest of the parent's mappings fault in lazily).
    const int64_t start_rss = resident_bytes();
    std::string message;
    try {
      message = "O" + work();
    } catch (const InputError& e) {
      message = std::string("I") + e.what();
    } catch (const std::exception& e) {
      message = std::string("E") + e.what();
    }
    write_all(fds[1], fmt::format("{} ", start_rss) + message);
    ::close(fds[1]);
    ::_exit(0);  // no atexit handlers or static destructors of the parent's state
  }
  ::close(fds[1]);
  std::string message = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  struct rusage rusage {};
  while (::wait4(pid, &status, 0, &rusage) < 0 && errno == EINTR) {
  }
  if (usage != nullptr) {
    usage->cpu_seconds = static_cast<double>(rusage.ru_utime.tv_sec + rusage.ru_stime.tv_sec) +
                         static_cast<double>(rusage.ru_utime.tv_usec + rusage.ru_stime.tv_usec) * 1e-6;
    usage->max_rss_bytes = static_cast<int64_t>(rusage.ru_maxrss) * 1024;  // Linux reports KiB
  }
  if (WIFSIGNALED(status)) {
    throw InternalError(fmt::format("the simulation process died with signal {} ({})", WTERMSIG(status),
                                    strsignal(WTERMSIG(status))));
  }
  const size_t space = message.find(' ');
  if (message.empty() || space == std::string::npos || space + 1 == message.size()) {
    throw InternalError("the simulation process exited without a result");
  }
  if (usage != nullptr) usage->start_rss_bytes = std::stoll(message.substr(0, space));
  const char tag = message[space + 1];
  message.erase(0, space + 2);
  if (tag == 'I') throw InputError(message);
  if (tag == 'E') throw InternalError(message);
  return message;
}

}  // namespace ragged::sim
