// Every bad-input path: one clear line on stderr, exit code 2, nothing on stdout.

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include <algorithm>

#include "cli/cli.hpp"
#include "cli_test_util.hpp"
#include "common/file_io.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_cli;

class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ragged_cli_errors_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    write_file_atomically(path, text);
    return path.string();
  }

  static void expect_bad_input(const CliResult& result, const std::string& needle) {
    EXPECT_EQ(result.code, 2) << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
    EXPECT_EQ(result.err.rfind("ragged: error: ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(needle), std::string::npos) << result.err;
    // One line: a single newline, at the end.
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
  }

  fs::path dir_;
};

const char* kValid =
    "model { catalog: \"llama3-8b\" }\n"
    "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";

TEST_F(CliErrors, MissingScenarioFile) {
  expect_bad_input(run_cli({"scenario", "validate", (dir_ / "nope.textproto").string()}), "nope.textproto");
}

TEST_F(CliErrors, MalformedScenario) {
  std::string path = write("bad.textproto", "cluster { nodes: \n");
  expect_bad_input(run_cli({"scenario", "validate", path}), "bad.textproto:2:");
}

TEST_F(CliErrors, ZeroGpus) {
  std::string path = write("zero.textproto", "model { catalog: \"llama3-8b\" }\n"
                                             "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 0 }\n");
  expect_bad_input(run_cli({"scenario", "validate", path}), "zero.textproto:2:51: cluster.nodes: nodes is 0");
}

TEST_F(CliErrors, AFewProblemsAreListedALineEach) {
  std::string path = write("two.textproto", "model { catalog: \"llama3-8b\" }\n"
                                            "cluster { gpu { preset: \"h100\" } gpus_per_node: 0 nodes: 0 }\n");
  const CliResult r = run_cli({"scenario", "validate", path});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("ragged: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("two.textproto:2:34: cluster.gpus_per_node: gpus_per_node is 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(1 more problem)\n  and "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("two.textproto:2:51: cluster.nodes: nodes is 0"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
}

TEST_F(CliErrors, BlockThatDoesNotDivideATensor) {
  std::string path = write("block.json", R"({"model": {"catalog": "gpt-oss-120b"},
  "cluster": {"gpu": {"preset": "h800"}, "gpus_per_node": 8, "nodes": 2},
  "training": {"granularity": {"default_spec": {"kind": "BLOCK", "block_rows": 128, "block_cols": 128}}}})");
  expect_bad_input(run_cli({"scenario", "validate", path}), "block.json:3:32: training.granularity.default_spec: block 128x128");
}

TEST_F(CliErrors, UnknownModelInInspect) {
  expect_bad_input(run_cli({"inspect", "llama5-1t"}), "llama5-1t");
}

TEST_F(CliErrors, MissingConfigJson) {
  expect_bad_input(run_cli({"inspect", (dir_ / "config.json").string()}), "config.json");
}

TEST_F(CliErrors, UnsupportedModelType) {
  std::string path = write("config.json", R"({"model_type": "bert", "hidden_size": 768})");
  expect_bad_input(run_cli({"inspect", path}), "bert");
}

TEST_F(CliErrors, UnknownSubcommandAndFlag) {
  EXPECT_EQ(run_cli({"simulat"}).code, 2);
  EXPECT_EQ(run_cli({"models", "--jsn"}).code, 2);
  EXPECT_EQ(run_cli({}).code, 2);
  EXPECT_EQ(run_cli({"inspect", "llama3-8b", "--seq", "0"}).code, 2);
}

TEST_F(CliErrors, UnknownShippedScenario) {
  expect_bad_input(run_cli({"scenario", "show", "llama3-8b-9xh100"}), "llama3-8b-8xh100");
}

TEST_F(CliErrors, ValidScenarioPasses) {
  std::string path = write("ok.textproto", kValid);
  CliResult result = run_cli({"scenario", "validate", path});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("valid"), std::string::npos);
}

// The real executable: exit codes reach the shell, and nothing aborts.
TEST_F(CliErrors, BinaryExitCodes) {
  EXPECT_EQ(testing::run_binary("--version").code, 0);
  CliResult missing = testing::run_binary("scenario validate " + (dir_ / "missing.textproto").string());
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("missing.textproto"), std::string::npos) << missing.err;
  EXPECT_EQ(testing::run_binary("inspect llama5-1t").code, 2);
  EXPECT_EQ(testing::run_binary("no-such-command").code, 2);
}

// Hostile inputs end in one readable line: numbers echoed shortened, not
// the 300 digits of a double's range; files that are not regular refused at
// once; protobuf's own log routed into the message.
TEST_F(CliErrors, HostileInputsEndInOneShortLine) {
  const std::string fifo = (dir_ / "scenario.textproto").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string bad_json = write("bad.json", "{\"metadata\": {");
  const std::string bad_utf8 = write("bad.pb", std::string("\x0a\x04\x0a\x02\xff\xfe", 6));
  // A 30,000-character field name crashed the error's explanation (std::regex recursion).
  const std::string huge_name = write("huge.textproto", std::string(30000, 'a') + ": 1\n");
  const std::string huge_key = write("huge.json", "{\"" + std::string(30000, 'k') + "\": 1}");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"simulate", "--gpus", "1e300"}, "--gpus: '1e300' is not a whole number"},
      {{"simulate", "--gpus", std::string(300, '9')}, "--gpus: 99999999999999999999... is out of range"},
      {{"run", "--steps", "-5"}, "--steps: -5 is out of range: give a whole number from 1 to 1,000,000"},
      {{"run", "--tolerance", "2"}, "--tolerance: 2 is out of range: give a number from 0 to 1"},
      {{"plan", fifo}, "it is a FIFO; give a regular file"},
      {{"plan", "/dev/zero"}, "it is a character device"},
      {{"compare", bad_json, bad_json}, "invalid JSON Trace: Unexpected end of string"},
      {{"compare", bad_utf8, bad_utf8}, "contains invalid UTF-8 data"},
      {{"scenario", "validate", huge_name}, "unknown field 'aaaaaaaaaaaaaaaaaaaa...'"},
      {{"scenario", "validate", huge_key}, "unknown field 'kkkkkkkkkkkkkkkkkkkk...'"},
  };
  for (const auto& [args, needle] : cases) {
    const CliResult result = run_cli(args);
    expect_bad_input(result, needle);
    EXPECT_LE(result.err.size(), 300u) << result.err;  // the issue's bar: one line of about 300 characters
  }
}

// An output path that cannot be written is refused before the work: each
// case holds a later failure (a missing calibration file, a missing
// validation folder) or a report the work prints, which came first before
// (a --mode full simulation of 10,240 GPUs ran 15.5 s, a search minutes,
// before the write failed).
TEST_F(CliErrors, AnOutputThatCannotBeWrittenIsRefusedBeforeTheWork) {
  const std::string missing = (dir_ / "missing" / "out").string();
  const std::string tiny_search = std::string(RAGGED_SOURCE_DIR) + "/tests/tune/data/tiny-llama-8xsmall.textproto";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"simulate", "tiny-llama-4xcpu", "--calibration", (dir_ / "none.json").string(), "--trace", missing + ".pb"},
       "cannot write '" + missing + ".pb': No such file or directory"},
      {{"simulate", "tiny-llama-4xcpu", "--calibration", (dir_ / "none.json").string(), "--chrome-trace", dir_.string()},
       "it is a directory; give a file name"},
      {{"validate", (dir_ / "no-set").string(), "--write-residuals", missing + ".tsv"}, "cannot write '" + missing + ".tsv'"},
      {{"tune", tiny_search, "--strategies", "ragged", "--no-cache", "--write", missing + ".textproto"},
       "cannot write '" + missing + ".textproto'"},
      {{"run", "tiny-llama-4xcpu", "--gpus", "1", "--steps", "1", "--trace", missing + ".json"},
       "cannot write '" + missing + ".json'"},
  };
  for (const auto& [args, needle] : cases) expect_bad_input(run_cli(args), needle);
}

// The report that cannot reach standard output is an error with its own
// exit code, and the trace the command writes is still written.
TEST(CliOutput, AReportThatCannotBeWrittenFailsAndTheTraceIsStillWritten) {
  const fs::path trace = fs::temp_directory_path() / ("ragged_full_stdout_" + std::to_string(::getpid()) + ".pb");
  const CliResult full = testing::run_binary("simulate tiny-llama-4xcpu --trace " + trace.string() + " > /dev/full");
  EXPECT_EQ(full.code, kExitOutputFailed) << full.err;
  EXPECT_NE(full.err.find("ragged: error: cannot write the report to standard output: No space left on device"),
            std::string::npos)
      << full.err;
  EXPECT_TRUE(fs::exists(trace));
  fs::remove(trace);
}

// A reader that went away (`ragged simulate ... | head -0`) is a failed
// write, said in one line (exit 6), not a silent death by SIGPIPE; the
// trace is still written.
TEST(CliOutput, AReaderThatWentAwayIsSaidAndTheTraceIsStillWritten) {
  const std::string tag = std::to_string(::getpid());
  const fs::path trace = fs::temp_directory_path() / ("ragged_closed_pipe_" + tag + ".pb");
  const fs::path err = fs::temp_directory_path() / ("ragged_closed_pipe_" + tag + ".err");
  const std::string binary = std::string(RAGGED_BINARY_DIR) + "/ragged";
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  ::close(ends[0]);  // nobody reads
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(ends[1], STDOUT_FILENO);
    std::freopen(err.c_str(), "w", stderr);
    std::signal(SIGPIPE, SIG_DFL);  // as a shell starts it
    ::execl(binary.c_str(), binary.c_str(), "simulate", "tiny-llama-4xcpu", "--trace", trace.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(ends[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kExitOutputFailed) << status;
  EXPECT_EQ(testing::without_sanitizer_notes(read_file(err)),
            "ragged: error: cannot write the report to standard output: Broken pipe\n");
  EXPECT_TRUE(fs::exists(trace));
  fs::remove(trace);
  fs::remove(err);
}

// A command stopped by SIGHUP (its terminal closed) says so in one line,
// then ends by the signal as the shell expects.
TEST(CliOutput, AHangupSaysSoBeforeTheCommandEnds) {
  const fs::path err = fs::temp_directory_path() / ("ragged_sighup_" + std::to_string(::getpid()) + ".err");
  const std::string binary = std::string(RAGGED_BINARY_DIR) + "/ragged";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(err.c_str(), "w", stderr);
    std::freopen("/dev/null", "w", stdout);
    ::execl(binary.c_str(), binary.c_str(), "tune", "--model", "llama3-70b", "--gpus", "1024", "--no-cache",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Once the command catches SIGHUP (its handler is in place: bit 0 of
  // /proc's SigCgt mask); the search it runs takes minutes. The child must
  // have become `ragged tune` first: before the exec it carries this test
  // process's own handlers (an in-process cli::run installed them).
  const auto read_proc = [pid](const char* name) {
    std::ifstream proc(fs::path("/proc") / std::to_string(pid) / name);  // size 0 to stat: read as a stream
    return std::string((std::istreambuf_iterator<char>(proc)), std::istreambuf_iterator<char>());
  };
  for (int i = 0; i < 1000; ++i) {
    const std::string status_text = read_proc("status");
    const size_t at = status_text.find("SigCgt:");
    const bool exec_done = read_proc("cmdline").find("tune") != std::string::npos;
    if (exec_done && at != std::string::npos && (std::stoull(status_text.substr(at + 7), nullptr, 16) & 1u) != 0) break;
    ::usleep(10000);
  }
  ::kill(pid, SIGHUP);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGHUP) << status;
  const std::string text = read_file(err);
  EXPECT_NE(text.find("ragged: stopped by SIGHUP (the terminal went away)"), std::string::npos) << text;
  fs::remove(err);
}

// The sanitized build's stack-switch warning is dropped from what the tests
// compare; Ragged's own lines and any other runtime report are kept.
TEST(CliOutput, OnlyTheSanitizerStackSwitchWarningIsDropped) {
  const std::string warning =
      "==4242==WARNING: ASan is ignoring requested __asan_handle_no_return: stack type: default top: 0x7ffd; "
      "bottom 0x7f00; size: 0x00fd (1085)\nFalse positive error reports may follow\n"
      "For details see https://github.com/google/sanitizers/issues/189\n";
  const std::string line = "ragged: error: cannot write the report to standard output: Broken pipe\n";
  EXPECT_EQ(testing::without_sanitizer_notes(warning + warning + line), line);
  const std::string report = "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020\n";
  EXPECT_EQ(testing::without_sanitizer_notes(report + line), report + line);
}

}  // namespace
}  // namespace ragged::cli
