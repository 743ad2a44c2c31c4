#include "common/file_io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include <gtest/gtest.h>

#include "common/errors.hpp"

namespace ragged {
namespace {

namespace fs = std::filesystem;

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ragged_file_io_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FileIoTest, WriteThenReadRoundTrips) {
  std::string contents("line one\nline two\n\0binary", 25);
  write_file_atomically(dir_ / "a.txt", contents);
  EXPECT_EQ(read_file(dir_ / "a.txt"), contents);
}

TEST_F(FileIoTest, OverwriteReplacesWholeFileAndLeavesNoTemporaries) {
  write_file_atomically(dir_ / "a.txt", std::string(10000, 'x'));
  write_file_atomically(dir_ / "a.txt", "short");
  EXPECT_EQ(read_file(dir_ / "a.txt"), "short");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1);
}

// A name near the file-name limit is a valid target; its temporary, which
// adds a dot and a suffix, must not be what fails.
TEST_F(FileIoTest, ATargetNearTheNameLimitIsWrittenThroughAShortenedTemporary) {
  const long limit = ::pathconf(dir_.c_str(), _PC_NAME_MAX);
  ASSERT_GT(limit, 16);
  const std::string name = std::string(static_cast<size_t>(limit) - 3, 'a') + ".pb";
  write_file_atomically(dir_ / name, "contents");
  EXPECT_EQ(read_file(dir_ / name), "contents");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1);
}

// A writer killed by SIGKILL (no handler runs) leaves its hidden temporary;
// the next write of the same target removes it, but not one another live
// writer still holds.
TEST_F(FileIoTest, AKilledWritersTemporaryIsRemovedByTheNextWriteAndALiveOnesIsNot) {
  const fs::path abandoned = dir_ / ".out.json.tmp.AbC123";
  std::ofstream(abandoned) << std::string(1 << 20, 'x');
  const fs::path live = dir_ / ".out.json.tmp.LiVe42";
  std::ofstream(live) << "being written";
  const int held = ::open(live.c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  const fs::path other = dir_ / ".other.json.tmp.ZzZ999";
  std::ofstream(other) << "another target's";
  const fs::path young = dir_ / ".out.json.tmp.NeW000";  // just made: its writer may lock it next
  std::ofstream(young) << "starting";
  for (const fs::path& p : {abandoned, live, other}) fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(1));
  write_file_atomically(dir_ / "out.json", "done");
  EXPECT_EQ(read_file(dir_ / "out.json"), "done");
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(young));
  ::close(held);
}

TEST_F(FileIoTest, WriteIntoMissingDirectoryIsInputErrorAndKeepsNothing) {
  EXPECT_THROW(write_file_atomically(dir_ / "missing" / "a.txt", "x"), InputError);
  EXPECT_FALSE(fs::exists(dir_ / "missing"));
}

TEST_F(FileIoTest, ReadMissingFileNamesThePath) {
  try {
    read_file(dir_ / "nope.textproto");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.textproto"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_F(FileIoTest, ReadRefusesWhatIsNotARegularFileAtOnce) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer: a blocking open would wait forever.
  EXPECT_NE(message_of([&] { read_file(fifo); }).find("it is a FIFO; give a regular file"), std::string::npos);
  EXPECT_NE(message_of([] { read_file("/dev/zero"); }).find("it is a character device"), std::string::npos);
  EXPECT_NE(message_of([&] { read_file(dir_); }).find("it is a directory"), std::string::npos);
}

TEST_F(FileIoTest, ReadRefusesAFileOverTheCap) {
  const fs::path big = dir_ / "big.textproto";
  { std::ofstream(big) << std::string(1000, 'x'); }
  EXPECT_EQ(read_file(big, 1000).size(), 1000u);
  EXPECT_NE(message_of([&] { read_file(big, 999); }).find("1000 bytes is over the limit of 999 bytes"),
            std::string::npos);
  // The default cap: 16 MiB; a sparse file one byte over is refused without reading it.
  fs::resize_file(big, static_cast<uintmax_t>(kMaxInputBytes) + 1);
  EXPECT_THROW(read_file(big), InputError);
}

TEST_F(FileIoTest, AnExistingFifoIsWrittenInPlaceAndStaysAFifo) {
  const fs::path fifo = dir_ / "trace.pb";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader opens first (a FIFO no process reads is refused, below).
  const int read_end = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(read_end, 0);
  // A read of a FIFO with no writer is end-of-file: the test holds a write
  // end of its own until the write is done, so that a reader scheduled first
  // (a loaded machine) waits for the data instead of closing the FIFO under
  // the write.
  const int held_writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  ASSERT_GE(held_writer, 0);
  ASSERT_EQ(::fcntl(read_end, F_SETFL, 0), 0);
  std::string received;
  std::thread reader([&] {
    std::array<char, 64> buffer{};
    for (ssize_t n; (n = ::read(read_end, buffer.data(), buffer.size())) > 0;) received.append(buffer.data(), n);
    ::close(read_end);
  });
  const std::string error = message_of([&] { write_file_atomically(fifo, "through the pipe"); });
  ::close(held_writer);
  reader.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(received, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

// A plain open(O_WRONLY) of a FIFO waits for a reader: `--trace fifo` with
// none hung forever after the simulation (issue 52, "some output targets
// block forever").
TEST_F(FileIoTest, AFifoThatNoProcessReadsIsRefusedAtOnce) {
  const fs::path fifo = dir_ / "nobody-reads.pb";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NO_THROW(check_output_target(fifo));  // its reader may start later
  const std::string error = message_of([&] { write_file_atomically(fifo, "x"); });
  EXPECT_NE(error.find("it is a FIFO that no process reads; start its reader first"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_fifo(fifo));
}

// What the write would refuse is refused before the work that makes the
// contents, and the check leaves nothing behind.
TEST_F(FileIoTest, CheckOutputTargetRefusesWhatTheWriteWouldAndWritesNothing) {
  EXPECT_NE(message_of([&] { check_output_target(dir_ / "missing" / "t.pb"); }).find("No such file or directory"),
            std::string::npos);
  EXPECT_NE(message_of([&] { check_output_target(dir_); }).find("it is a directory; give a file name"),
            std::string::npos);
  EXPECT_NE(message_of([&] { check_output_target(dir_ / std::string(300, 'n')); }).find("File name too long"),
            std::string::npos);
  const fs::path fine = dir_ / "t.pb";
  check_output_target(fine);
  EXPECT_FALSE(fs::exists(fine));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 0);
  write_file_atomically(fine, "kept");
  check_output_target(fine);
  EXPECT_EQ(read_file(fine), "kept");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
  EXPECT_NO_THROW(check_output_target("/dev/null"));
}

TEST_F(FileIoTest, ADeviceIsNeverReplaced) {
  // Whoever runs this (root included), /dev/full fails the write and stays a device.
  EXPECT_NE(message_of([] { write_file_atomically("/dev/full", "x"); }).find("No space left on device"),
            std::string::npos);
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
}

TEST_F(FileIoTest, NewFilesTakeTheUmasksModeAndReplacedFilesKeepTheirs) {
  const mode_t before = ::umask(027);
  const fs::path fresh = dir_ / "fresh.json";
  write_file_atomically(fresh, "{}");
  struct stat st {};
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ::chmod(fresh.c_str(), 0604);
  write_file_atomically(fresh, "{\"again\": 1}");
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0604u);
  ::umask(before);
}

TEST_F(FileIoTest, ASymlinkKeepsPointingAtTheReplacedFile) {
  const fs::path real = dir_ / "real.json", link = dir_ / "link.json";
  write_file_atomically(real, "old");
  fs::create_symlink(real, link);
  write_file_atomically(link, "new");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(real), "new");
}

TEST_F(FileIoTest, ReadDirectoryIsInputError) { EXPECT_THROW(read_file(dir_), InputError); }

}  // namespace
}  // namespace ragged
