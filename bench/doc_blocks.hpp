#pragma once
// The command-output blocks of a Markdown document: fenced blocks whose first
// line is a `$ COMMAND` line, each command followed by the output it printed.
// scripts/update-doc-outputs re-runs the commands and rewrites the outputs
// (ragged-doc-outputs), so that no figure in the docs is typed by hand.
//
// A block may carry one marker, an HTML comment on the line right above its
// opening fence:
//   <!-- output: not regenerated: REASON -->  left as written (needs mpirun, a GPU, ...)
//   <!-- output: slow: REASON -->             regenerated, left out by --skip-slow (the test)
// Volatile figures (the simulator's wall time and memory, tune's wall time
// and workers, the planner's wall time) are normalised before two outputs
// are compared.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ragged::bench {

enum class BlockMarker { kRegenerated, kSlow, kNotRegenerated };

struct DocCommand {
  std::string command;               // the text after "$ "
  std::size_t line = 0;              // 1-based line of the "$ " line
  std::vector<std::string> output;   // the lines printed, trailing blank lines removed
  std::size_t trailing_blank_lines = 0;  // kept when the output is rewritten
};

struct DocBlock {
  std::size_t open_line = 0;   // 1-based line of the opening fence
  std::size_t close_line = 0;  // 1-based line of the closing fence
  BlockMarker marker = BlockMarker::kRegenerated;
  std::string reason;  // the marker's reason
  std::vector<DocCommand> commands;
};

// The command-output blocks of `lines` (a document split at '\n'). Throws
// InputError naming `file`:line for a marker that is not right above such a
// block, an unknown marker, or a fence never closed.
std::vector<DocBlock> parse_doc_blocks(const std::vector<std::string>& lines, std::string_view file);

// `line` with its volatile figures replaced by placeholders.
std::string normalise_volatile(std::string_view line);

// normalise_volatile on every line, and the planner's wall time (the last
// column under a "plan ms" header, up to a blank line) replaced too.
std::vector<std::string> normalise_output(const std::vector<std::string>& lines);

// `text` split at '\n' (a final '\n' ends the last line, it opens no new one).
std::vector<std::string> split_lines(std::string_view text);

// Lines as printed: split_lines with trailing blank lines removed.
std::vector<std::string> output_lines(std::string_view text);

struct OutputDifference {
  std::size_t index = 0;  // 0-based line of the output where they first differ
  std::string documented;  // that line in the document ("(none)" past its end)
  std::string printed;     // that line as the command prints it
};

// Where a documented output and a fresh one first differ once normalised;
// none when they agree.
std::optional<OutputDifference> first_difference(const std::vector<std::string>& documented,
                                                 const std::vector<std::string>& printed);

// The block's lines between its fences with each command's output replaced by
// `outputs` (one per command, in order), each followed by the blank lines the
// document had after it.
std::vector<std::string> render_block(const DocBlock& block, const std::vector<std::vector<std::string>>& outputs);

}  // namespace ragged::bench
