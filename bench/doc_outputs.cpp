// Regenerates the command outputs quoted in the docs (bench/doc_blocks.hpp has
// what a block is and its markers): re-runs every `$ COMMAND` of every block
// from the current folder (the repository root) with `ragged` found in --bin,
// stdout and stderr together as a terminal shows them, and rewrites each
// output that moved, through a temporary file renamed into place. With
// --check it rewrites nothing and exits 1 naming the file, line and first
// differing line of every stale block (the `docs` ctest). Every command runs
// with a fresh, empty XDG_CACHE_HOME (tune's result cache, imported MPT
// configs), so no output comes from a cache an older build filled.
// Usage: ragged-doc-outputs [--check] [--skip-slow] [--bin DIR] [FILE...]
// (default: README.md and the *.md of docs/ and validation/)

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/doc_blocks.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"

namespace {

using namespace ragged;
using namespace ragged::bench;
namespace fs = std::filesystem;

struct Options {
  bool check = false;
  bool skip_slow = false;
  std::string bin;
  std::vector<std::string> files;
};

struct Tally {
  int current = 0, regenerated = 0, stale = 0, slow_skipped = 0, not_regenerated = 0;
};

constexpr std::string_view kUsage = "usage: ragged-doc-outputs [--check] [--skip-slow] [--bin DIR] [FILE...]";

// README.md and the Markdown files of docs/ and validation/ (not their
// subfolders: docs/results/ is written by its own generators).
std::vector<std::string> default_documents() {
  std::vector<std::string> files{"README.md"};
  if (!fs::is_regular_file(files[0])) {
    throw InputError("README.md: not found here; run from the repository root, or name the documents");
  }
  for (const char* folder : {"docs", "validation"}) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (entry.is_regular_file() && entry.path().extension() == ".md") found.push_back(entry.path().string());
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--check") {
      options.check = true;
    } else if (arg == "--skip-slow") {
      options.skip_slow = true;
    } else if (arg == "--bin" && i + 1 < argc) {
      options.bin = argv[++i];
    } else if (arg.starts_with("--")) {
      throw InputError(fmt::format("unknown option {}; {}", arg, kUsage));
    } else {
      options.files.emplace_back(arg);
    }
  }
  if (options.files.empty()) options.files = default_documents();
  return options;
}

// `ragged` from --bin first, and a cache folder of this run's own.
fs::path prepare_environment(const Options& options) {
  if (!options.bin.empty()) {
    const fs::path bin = fs::absolute(options.bin);
    if (!fs::is_directory(bin)) throw InputError(fmt::format("--bin {}: not a folder; give the build folder", options.bin));
    const char* path = std::getenv("PATH");
    ::setenv("PATH", (bin.string() + ":" + (path ? path : "/usr/bin:/bin")).c_str(), 1);
  }
  std::string cache = (fs::temp_directory_path() / "ragged-doc-outputs.XXXXXX").string();
  if (::mkdtemp(cache.data()) == nullptr) throw InputError(fmt::format("cannot create a cache folder {}", cache));
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  ::setenv("LC_ALL", "C", 1);
  return cache;
}

struct CommandRun {
  std::vector<std::string> output;
  int exit_code = 0;
  double seconds = 0;
};

CommandRun run_command(const std::string& command, std::string_view where) {
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = ::popen(("exec 2>&1\n" + command).c_str(), "r");
  if (pipe == nullptr) throw InputError(fmt::format("{}: cannot start `{}`", where, command));
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  const int status = ::pclose(pipe);
  CommandRun run{output_lines(text), WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  if (run.exit_code == 126 || run.exit_code == 127) {
    throw InputError(fmt::format("{}: `{}` could not run (exit {}): {}; build it or pass --bin BUILD_DIR", where,
                                 command, run.exit_code, run.output.empty() ? "" : run.output.front()));
  }
  return run;
}

std::string join_lines(const std::vector<std::string>& lines, bool final_newline) {
  std::string text;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    text += lines[i];
    if (i + 1 < lines.size() || final_newline) text += '\n';
  }
  return text;
}

std::string_view marker_word(BlockMarker marker) {
  return marker == BlockMarker::kSlow ? "slow" : marker == BlockMarker::kNotRegenerated ? "not regenerated" : "";
}

// Re-runs one block; returns the outputs to write (the documented one where
// it still holds once normalised), and says whether any moved.
bool refresh_block(const std::string& file, const DocBlock& block, const Options& options, Tally& tally,
                   std::vector<std::vector<std::string>>& outputs) {
  bool stale = false;
  for (const DocCommand& command : block.commands) {
    const auto where = fmt::format("{}:{}", file, command.line);
    CommandRun run = run_command(command.command, where);
    const auto difference = first_difference(command.output, run.output);
    std::cout << fmt::format("{}  {:6.2f} s  {:<7}{}  {}\n", where, run.seconds, difference ? "stale" : "current",
                             run.exit_code == 0 ? "" : fmt::format(" (exit {})", run.exit_code), command.command)
              << std::flush;
    if (difference && options.check) {
      std::cout << fmt::format("{}: stale output of `{}`: its line {} reads\n    {}\n  where the command prints\n    {}\n",
                               where, command.command, difference->index + 1, difference->documented,
                               difference->printed);
    }
    stale = stale || difference.has_value();
    outputs.push_back(difference ? std::move(run.output) : command.output);
  }
  ++(stale ? (options.check ? tally.stale : tally.regenerated) : tally.current);
  return stale;
}

Tally process_file(const std::string& file, const Options& options) {
  const std::string text = read_file(file);
  std::vector<std::string> lines = split_lines(text);
  const std::vector<DocBlock> blocks = parse_doc_blocks(lines, file);
  Tally tally;
  // Rewritten from the last block up, so that earlier line numbers hold.
  std::vector<std::pair<const DocBlock*, std::vector<std::string>>> rewrites;
  for (const DocBlock& block : blocks) {
    if (block.marker == BlockMarker::kNotRegenerated || (block.marker == BlockMarker::kSlow && options.skip_slow)) {
      ++(block.marker == BlockMarker::kSlow ? tally.slow_skipped : tally.not_regenerated);
      std::cout << fmt::format("{}:{}  {}: {}\n", file, block.open_line + 1, marker_word(block.marker), block.reason);
      continue;
    }
    std::vector<std::vector<std::string>> outputs;
    if (refresh_block(file, block, options, tally, outputs) && !options.check) {
      rewrites.emplace_back(&block, render_block(block, outputs));
    }
  }
  for (auto it = rewrites.rbegin(); it != rewrites.rend(); ++it) {
    const auto first = lines.begin() + static_cast<std::ptrdiff_t>(it->first->open_line);
    lines.erase(first, lines.begin() + static_cast<std::ptrdiff_t>(it->first->close_line - 1));
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(it->first->open_line), it->second.begin(),
                 it->second.end());
  }
  if (!rewrites.empty()) write_file_atomically(file, join_lines(lines, text.ends_with('\n')));
  return tally;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path cache;
  try {
    const Options options = parse_options(argc, argv);
    cache = prepare_environment(options);
    Tally total;
    for (const std::string& file : options.files) {
      const Tally t = process_file(file, options);
      std::cout << fmt::format("{}: {} current, {} {}, {} slow left out, {} not regenerated\n", file, t.current,
                               options.check ? t.stale : t.regenerated, options.check ? "stale" : "regenerated",
                               t.slow_skipped, t.not_regenerated);
      total.current += t.current;
      total.stale += t.stale;
      total.regenerated += t.regenerated;
      total.slow_skipped += t.slow_skipped;
      total.not_regenerated += t.not_regenerated;
    }
    fs::remove_all(cache);
    if (total.stale > 0) {
      std::cout << fmt::format("{} stale block(s): run scripts/update-doc-outputs and commit what it rewrites\n",
                               total.stale);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    if (!cache.empty()) fs::remove_all(cache);
    std::cerr << "ragged-doc-outputs: error: " << e.what() << "\n";
    return 2;
  }
}
