#include "sim/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

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

// This process's resident memory (/proc/self/statm), 0 where unreadable.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

using Work = std::function<std::string(const std::function<void(double)>&)>;

// The child's message: "<length> " then `length` bytes (start RSS, a space,
// the tag and the payload). The length lets the parent stop reading without
// waiting for end of file, which a sibling child forked meanwhile from another
// thread of the parent (holding a copy of the pipe's write end) would delay.
[[noreturn]] void child_main(const Work& work, int result_fd, int progress_fd, int nice_increment) {
  if (nice_increment > 0) {
    errno = 0;
    [[maybe_unused]] const int niceness = ::nice(nice_increment);  // best effort
  }
  const int64_t start_rss = resident_bytes();
  std::string message;
  double last = -1;
  auto progress = [&](double fraction) {
    if (progress_fd < 0 || (fraction < 1 && fraction - last < 1.0 / 200)) return;
    last = fraction;
    // Never blocks: a full pipe drops the report (the parent keeps the latest).
    [[maybe_unused]] ssize_t n = ::write(progress_fd, &fraction, sizeof fraction);
  };
  try {
    message = "O" + work(progress);
  } catch (const InputError& e) {
    message = std::string("I") + e.what();
  } catch (const std::exception& e) {
    message = std::string("E") + e.what();
  }
  message = fmt::format("{} ", start_rss) + message;
  write_all(result_fd, fmt::format("{} ", message.size()) + message);
  ::close(result_fd);
  ::_exit(0);  // no atexit handlers or static destructors of the parent's state
}

// Reads what is available on a non-blocking descriptor; false at end of file.
bool drain(int fd, std::string& out) {
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      out.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

// Whether `data` holds the child's whole length-prefixed message.
bool complete(const std::string& data) {
  const size_t space = data.find(' ');
  if (space == std::string::npos) return false;
  return data.size() >= space + 1 + std::stoull(data.substr(0, space));
}

// The child's user + system time in clock ticks (/proc/<pid>/stat fields 14
// and 15, counted after the command name, which may hold spaces), -1 where
// unreadable.
int64_t cpu_ticks(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t name_end = text.rfind(')');
  if (name_end == std::string::npos) return -1;
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 13; ++i) fields >> field;
  if (!(fields >> utime >> stime)) return -1;
  return utime + stime;
}

// Watches a child for the stall described in child_process.hpp.
class StallWatch {
 public:
  StallWatch(pid_t pid, double stall_seconds) : pid_(pid), stall_seconds_(stall_seconds) {}

  // Whether the child has neither run nor sent anything for stall_seconds.
  bool stalled(size_t bytes_received) {
    if (stall_seconds_ <= 0) return false;
    const Clock::time_point now = Clock::now();
    if (now - checked_ < std::chrono::milliseconds(250)) return false;
    checked_ = now;
    const int64_t ticks = cpu_ticks(pid_);
    if (ticks != ticks_ || bytes_received != bytes_) {
      ticks_ = ticks;
      bytes_ = bytes_received;
      moved_ = now;
      return false;
    }
    return std::chrono::duration<double>(now - moved_).count() >= stall_seconds_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  pid_t pid_;
  double stall_seconds_;
  int64_t ticks_ = -2;
  size_t bytes_ = 0;
  Clock::time_point checked_{}, moved_ = Clock::now();
};

// One fork of the work; nullopt when the child stalled and was killed.
std::optional<std::string> run_once(const Work& work, const ChildControl* control, ChildUsage* usage) {
  int result_pipe[2];
  int progress_pipe[2] = {-1, -1};
  if (::pipe2(result_pipe, O_CLOEXEC) != 0) throw InternalError(fmt::format("pipe failed: {}", std::strerror(errno)));
  if (control != nullptr && ::pipe2(progress_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(result_pipe[0]);
    ::close(result_pipe[1]);
    throw InternalError(fmt::format("pipe failed: {}", std::strerror(errno)));
  }
  // The child inherits unflushed stdio buffers; anything in the child that
  // flushes them (SimGrid does) would print the parent's pending output again.
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw InternalError(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    // The child dies with its parent: a killed `ragged simulate` (SIGTERM,
    // a closed terminal) left its simulation running at 100% CPU. The
    // parent may have gone before the request took effect.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(result_pipe[0]);
    if (progress_pipe[0] >= 0) ::close(progress_pipe[0]);
    child_main(work, result_pipe[1], progress_pipe[1], control != nullptr ? control->nice : 0);
  }
  ::close(result_pipe[1]);
  if (progress_pipe[1] >= 0) ::close(progress_pipe[1]);
  const int result_fd = result_pipe[0];
  const int progress_fd = progress_pipe[0];
  ::fcntl(result_fd, F_SETFL, ::fcntl(result_fd, F_GETFL) | O_NONBLOCK);

  std::string data, progress_bytes;
  bool result_open = true, progress_open = progress_fd >= 0, exited = false, cancelled = false, stalled = false;
  int status = 0;
  struct rusage rusage {};
  StallWatch watch(pid, control != nullptr ? control->stall_seconds : kStallSeconds);
  while (!exited) {
    if (control != nullptr && control->cancelled && control->cancelled()) {
      cancelled = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (watch.stalled(data.size() + progress_bytes.size())) {
      stalled = true;
      ::kill(pid, SIGKILL);
      break;
    }
    struct pollfd fds[2] = {{result_fd, POLLIN, 0}, {progress_fd, POLLIN, 0}};
    const int poll_ms = control != nullptr ? std::max(1, control->poll_ms) : 200;
    int ready = ::poll(fds, progress_open ? 2 : 1, result_open ? poll_ms : std::min(poll_ms, 5));
    if (ready < 0 && errno != EINTR) break;
    if (result_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      result_open = drain(result_fd, data) && !complete(data);
    }
    if (progress_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      progress_open = drain(progress_fd, progress_bytes);
      if (progress_bytes.size() >= sizeof(double) && control->progress) {
        double fraction = 0;
        std::memcpy(&fraction, progress_bytes.data() + (progress_bytes.size() / sizeof(double) - 1) * sizeof(double),
                    sizeof fraction);
        control->progress(fraction);
      }
      progress_bytes.erase(0, progress_bytes.size() / sizeof(double) * sizeof(double));
    }
    // The child has answered (or closed its end): reap it. Otherwise check
    // now and then that it still lives (a sibling may hold the pipe open).
    pid_t done = ::wait4(pid, &status, result_open ? WNOHANG : 0, &rusage);
    if (done == pid) exited = true;
    else if (done < 0 && errno != EINTR) break;
  }
  if (!exited) {
    while (::wait4(pid, &status, 0, &rusage) < 0 && errno == EINTR) {
    }
  }
  if (!cancelled && !stalled) drain(result_fd, data);
  ::close(result_fd);
  if (progress_fd >= 0) ::close(progress_fd);
  if (cancelled) throw Cancelled();
  if (stalled) return std::nullopt;
  if (usage != nullptr) {
    usage->cpu_seconds = static_cast<double>(rusage.ru_utime.tv_sec + rusage.ru_stime.tv_sec) +
                         static_cast<double>(rusage.ru_utime.tv_usec + rusage.ru_stime.tv_usec) * 1e-6;
    usage->max_rss_bytes = static_cast<int64_t>(rusage.ru_maxrss) * 1024;  // Linux reports KiB
  }
  if (WIFSIGNALED(status)) {
    throw InternalError(fmt::format("the simulation process died with signal {} ({})", WTERMSIG(status),
                                    strsignal(WTERMSIG(status))));
  }
  if (!complete(data)) throw InternalError("the simulation process exited without a result");
  std::string message = data.substr(data.find(' ') + 1);
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

std::string run(const Work& work, const ChildControl* control, ChildUsage* usage) {
  for (int attempt = 1; attempt <= kForkAttempts; ++attempt) {
    if (std::optional<std::string> answer = run_once(work, control, usage)) return *std::move(answer);
  }
  const double stall_seconds = control != nullptr ? control->stall_seconds : kStallSeconds;
  throw InternalError(fmt::format(
      "the simulation process used no CPU and sent nothing for {:g} s, {} times (each killed and forked again): "
      "a lock held by another thread at the fork, or a stopped process",
      stall_seconds, kForkAttempts));
}

}  // namespace

std::string run_in_child(const std::function<std::string()>& work, ChildUsage* usage) {
  return run([&](const std::function<void(double)>&) { return work(); }, nullptr, usage);
}

std::string run_in_child(const std::function<std::string(const std::function<void(double)>& progress)>& work,
                         const ChildControl& control, ChildUsage* usage) {
  return run(work, &control, usage);
}

}  // namespace ragged::sim
