#include "common/file_io.hpp"

#include <filesystem>

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

TEST_F(FileIoTest, ReadDirectoryIsInputError) { EXPECT_THROW(read_file(dir_), InputError); }

}  // namespace
}  // namespace ragged
