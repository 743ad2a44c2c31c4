#include "bench/doc_blocks.hpp"

#include <regex>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::bench {
namespace {

constexpr std::string_view kFence = "```";
constexpr std::string_view kPrompt = "$ ";
constexpr std::string_view kMarkerOpen = "<!-- output:";
constexpr std::string_view kMarkerClose = "-->";

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

bool is_blank(std::string_view line) { return trim(line).empty(); }
bool is_fence(std::string_view line) { return line.starts_with(kFence); }
bool is_marker(std::string_view line) { return trim(line).starts_with(kMarkerOpen); }

struct Marker {
  BlockMarker kind;
  std::string reason;
};

Marker parse_marker(std::string_view line, std::string_view file, std::size_t line_number) {
  auto where = fmt::format("{}:{}", file, line_number);
  std::string_view body = trim(line);
  if (!body.ends_with(kMarkerClose)) {
    throw InputError(fmt::format("{}: output marker not closed on its line; write it as <!-- output: slow: REASON -->",
                                 where));
  }
  body = trim(body.substr(kMarkerOpen.size(), body.size() - kMarkerOpen.size() - kMarkerClose.size()));
  for (auto [prefix, kind] : {std::pair{std::string_view{"not regenerated:"}, BlockMarker::kNotRegenerated},
                              std::pair{std::string_view{"slow:"}, BlockMarker::kSlow}}) {
    if (!body.starts_with(prefix)) continue;
    auto reason = trim(body.substr(prefix.size()));
    if (reason.empty()) {
      throw InputError(fmt::format("{}: output marker '{}' gives no reason; say why after the colon", where, prefix));
    }
    return {kind, std::string(reason)};
  }
  throw InputError(fmt::format("{}: unknown output marker '{}'; use 'not regenerated: REASON' or 'slow: REASON'",
                               where, body));
}

// The commands of a block's content lines (the first one a "$ " line).
std::vector<DocCommand> split_commands(const std::vector<std::string>& lines, std::size_t first, std::size_t end) {
  std::vector<DocCommand> commands;
  for (std::size_t i = first; i < end; ++i) {
    const std::string& line = lines[i];
    if (line.starts_with(kPrompt)) {
      commands.push_back({line.substr(kPrompt.size()), i + 1, {}, 0});
    } else {
      commands.back().output.push_back(line);
    }
  }
  for (auto& command : commands) {
    while (!command.output.empty() && is_blank(command.output.back())) {
      command.output.pop_back();
      ++command.trailing_blank_lines;
    }
  }
  return commands;
}

}  // namespace

std::vector<DocBlock> parse_doc_blocks(const std::vector<std::string>& lines, std::string_view file) {
  std::vector<DocBlock> blocks;
  std::optional<Marker> pending;  // the marker on the line just read
  std::size_t pending_line = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (is_marker(lines[i])) {
      pending = parse_marker(lines[i], file, i + 1);
      pending_line = i + 1;
      if (i + 1 >= lines.size() || !is_fence(lines[i + 1])) {
        throw InputError(fmt::format("{}:{}: an output marker must be on the line right above a block's opening ```",
                                     file, pending_line));
      }
      continue;
    }
    if (!is_fence(lines[i])) continue;
    std::size_t close = i + 1;
    while (close < lines.size() && !is_fence(lines[close])) ++close;
    if (close == lines.size()) {
      throw InputError(fmt::format("{}:{}: code block never closed; add a ``` line after it", file, i + 1));
    }
    const bool has_commands = close > i + 1 && lines[i + 1].starts_with(kPrompt);
    if (pending && !has_commands) {
      throw InputError(fmt::format("{}:{}: output marker above a block that does not start with a `$ COMMAND` line; "
                                   "remove the marker or start the block with the command",
                                   file, pending_line));
    }
    if (has_commands) {
      DocBlock block{i + 1, close + 1, BlockMarker::kRegenerated, {}, split_commands(lines, i + 1, close)};
      if (pending) {
        block.marker = pending->kind;
        block.reason = pending->reason;
      }
      blocks.push_back(std::move(block));
    }
    pending.reset();
    i = close;
  }
  return blocks;
}

std::string normalise_volatile(std::string_view line) {
  // A number with its time unit, as the CLI prints durations.
  static const std::string kTime = R"(\d[\d.,]*\s?(?:ns|us|ms|s|min|h))";
  static const std::vector<std::pair<std::regex, std::string>> kRules = {
      {std::regex(kTime + " wall"), "<time> wall"},
      {std::regex(R"(\d[\d.,]*\s?(?:B|KiB|MiB|GiB) of memory)"), "<bytes> of memory"},
      {std::regex(kTime + R"( on \d+ workers? \()" + kTime + R"( in the simulator\))"),
       "<time> on <n> workers (<time> in the simulator)"},
  };
  std::string text(line);
  for (const auto& [pattern, placeholder] : kRules) text = std::regex_replace(text, pattern, placeholder);
  return text;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> output_lines(std::string_view text) {
  std::vector<std::string> lines = split_lines(text);
  while (!lines.empty() && is_blank(lines.back())) lines.pop_back();
  return lines;
}

std::vector<std::string> normalise_output(const std::vector<std::string>& lines) {
  // `ragged plan --strategy all` ends each row of its table with the
  // planner's wall time, under a "plan ms" header, until a blank line.
  static const std::regex kLastNumber(R"(\d[\d.,]*\s*$)");
  std::vector<std::string> normalised;
  bool in_timed_table = false;
  for (const std::string& line : lines) {
    std::string text = normalise_volatile(line);
    if (is_blank(line)) in_timed_table = false;
    if (in_timed_table) text = std::regex_replace(text, kLastNumber, "<ms>");
    if (line.ends_with("plan ms")) in_timed_table = true;
    normalised.push_back(std::move(text));
  }
  return normalised;
}

std::optional<OutputDifference> first_difference(const std::vector<std::string>& documented,
                                                 const std::vector<std::string>& printed) {
  const std::vector<std::string> doc = normalise_output(documented), fresh = normalise_output(printed);
  const std::size_t n = std::max(doc.size(), fresh.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (i >= doc.size() || i >= fresh.size() || doc[i] != fresh[i]) {
      return OutputDifference{i, i < documented.size() ? documented[i] : "(none)",
                              i < printed.size() ? printed[i] : "(none)"};
    }
  }
  return std::nullopt;
}

std::vector<std::string> render_block(const DocBlock& block, const std::vector<std::vector<std::string>>& outputs) {
  std::vector<std::string> lines;
  for (std::size_t c = 0; c < block.commands.size(); ++c) {
    const DocCommand& command = block.commands[c];
    lines.push_back(std::string(kPrompt) + command.command);
    lines.insert(lines.end(), outputs[c].begin(), outputs[c].end());
    lines.insert(lines.end(), command.trailing_blank_lines, std::string());
  }
  return lines;
}

}  // namespace ragged::bench
