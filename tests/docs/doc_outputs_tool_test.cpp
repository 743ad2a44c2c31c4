// ragged-doc-outputs run on a small document of shell commands: what --check
// reports, what an update rewrites, and what it leaves alone.

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "common/file_io.hpp"

namespace fs = std::filesystem;

namespace {

constexpr const char* kTool = RAGGED_BINARY_DIR "/bench/ragged-doc-outputs";

struct ToolRun {
  int exit_code = -1;
  std::string output;
};

class DocOutputsTool : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ragged-doc-outputs-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ToolRun run_tool(const std::string& args) {
    const std::string command = "cd '" + dir_.string() + "' && '" + kTool + "' " + args + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    ToolRun run;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) run.output.append(buffer, n);
    const int status = ::pclose(pipe);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
  }
  void write(const std::string& text) { ragged::write_file_atomically(dir_ / "doc.md", text); }
  std::string read() { return ragged::read_file(dir_ / "doc.md"); }

  fs::path dir_;
};

void replace(std::string& text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
}

constexpr const char* kDocument =
    "# A doc\n"
    "\n"
    "```\n"
    "$ printf 'step 2.95 s\\nrank 0, 9.99 s wall\\n'\n"
    "step 2.94 s\n"
    "rank 0, 0.03 s wall\n"
    "\n"
    "$ echo second\n"
    "second\n"
    "```\n"
    "\n"
    "<!-- output: not regenerated: needs mpirun -->\n"
    "```\n"
    "$ echo measured\n"
    "typed by hand\n"
    "```\n"
    "<!-- output: slow: a long search -->\n"
    "```\n"
    "$ echo slow\n"
    "old slow\n"
    "```\n";

TEST_F(DocOutputsTool, CheckNamesTheFileLineAndFirstDifferingLineAndRewritesNothing) {
  write(kDocument);
  ToolRun run = run_tool("--check --skip-slow doc.md");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("doc.md:4: stale output of `printf 'step 2.95 s\\nrank 0, 9.99 s wall\\n'`: its line 1 "
                            "reads\n    step 2.94 s\n  where the command prints\n    step 2.95 s"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("doc.md:14  not regenerated: needs mpirun"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("doc.md:19  slow: a long search"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("doc.md: 0 current, 1 stale, 1 slow left out, 1 not regenerated"), std::string::npos)
      << run.output;
  EXPECT_EQ(read(), kDocument);
}

TEST_F(DocOutputsTool, AnUpdateRewritesWhatMovedKeepsWallTimesAndMarkedBlocksAndThenChecksClean) {
  write(kDocument);
  ToolRun update = run_tool("doc.md");
  ASSERT_EQ(update.exit_code, 0) << update.output;
  std::string expected = kDocument;
  replace(expected, "step 2.94 s\nrank 0, 0.03", "step 2.95 s\nrank 0, 9.99");
  replace(expected, "old slow", "slow");
  EXPECT_EQ(read(), expected);
  ToolRun check = run_tool("--check doc.md");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("doc.md: 2 current, 0 stale, 0 slow left out, 1 not regenerated"), std::string::npos)
      << check.output;
}

TEST_F(DocOutputsTool, AnOutputThatHoldsOnceNormalisedIsLeftAsWritten) {
  const std::string doc = "```\n$ echo 'rank 0, 1.25 s wall, 9.1 MiB of memory'\nrank 0, 0.02 s wall, 8.3 MiB of memory\n```\n";
  write(doc);
  ToolRun update = run_tool("doc.md");
  ASSERT_EQ(update.exit_code, 0) << update.output;
  EXPECT_EQ(read(), doc);
}

TEST_F(DocOutputsTool, ACommandThatCannotRunIsAnErrorNamingItsLine) {
  write("```\n$ ragged-no-such-command --x\nout\n```\n");
  ToolRun run = run_tool("doc.md");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("ragged-doc-outputs: error: doc.md:2: `ragged-no-such-command --x` could not run (exit 127)"),
            std::string::npos)
      << run.output;
}

}  // namespace
