#include "cli/cli.hpp"

#include <exception>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "common/utf8.hpp"
#include "common/version.hpp"
#include "traces/protobuf_log.hpp"

namespace ragged::cli {

namespace {

// A word of the message (a path, a name, a number echoed from the input)
// longer than kMaxWord keeps its start and end: a 5,000-character name does
// not fill the line. `starts` holds where each of the word's characters
// begins in `text`, so no cut splits a character or an escape.
constexpr size_t kMaxWord = 80;

void shorten_word(std::string& text, const std::vector<size_t>& starts) {
  if (starts.empty()) return;
  const size_t length = text.size() - starts.front();
  if (length <= kMaxWord) return;
  size_t head = starts.front();
  for (size_t s : starts) {
    if (s > starts.front() + 32) break;
    head = s;
  }
  size_t tail = text.size();
  for (auto s = starts.rbegin(); s != starts.rend() && *s >= text.size() - 24; ++s) tail = *s;
  const std::string end = text.substr(tail);
  text.resize(head);
  text += fmt::format("...({} characters)...", length) + end;
}

}  // namespace

int run_commands(int argc, const char* const* argv, std::ostream& out, std::ostream& err, AddCommand add_run) {
  CLI::App app{"Ragged: plan, predict and validate FSDP training with RaggedShard layouts", "ragged"};
  app.set_version_flag("--version", std::string("ragged ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough(false);
  Context context{out, err};
  add_models_command(app, context);
  add_inspect_command(app, context);
  add_scenario_command(app, context);
  add_plan_command(app, context);
  add_simulate_command(app, context);
  add_run(app, context);
  add_compare_command(app, context);
  add_validate_command(app, context);
  add_tune_command(app, context);

  traces::capture_protobuf_logs();
  try {
    app.parse(argc, argv);
    return kExitOk;
  } catch (const QuietExit& e) {
    return e.code;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    const auto parsed = app.get_subcommands();
    const std::string command = parsed.empty() ? "ragged" : "ragged " + parsed.back()->get_name();
    err << "ragged: error: " << one_line(e.what()) << "; see '" << command << " --help'\n";
    return kExitBadInput;
  } catch (const InputError& e) {
    err << "ragged: error: " << error_lines(e.what()) << '\n';
    return kExitBadInput;
  } catch (const CheckFailure& e) {
    err << "ragged: check failed: " << one_line(e.what()) << '\n';
    return kExitCheckFailed;
  } catch (const std::exception& e) {
    err << "ragged: internal error: " << one_line(e.what()) << '\n';
    return kExitInternal;
  }
}

std::string error_lines(std::string_view text) {
  constexpr std::string_view kMore = "\n  and ";
  std::string out;
  for (size_t line = 0; !text.empty() && line < 5; ++line) {
    const size_t next = text.find(kMore);
    if (line > 0) out += "\n  and ";
    out += one_line(text.substr(0, next));
    text = next == std::string_view::npos ? std::string_view() : text.substr(next + kMore.size());
  }
  return out;
}

std::string one_line(std::string_view text) {
  std::string out;
  std::vector<size_t> word;  // where each character of the current word starts in `out`
  bool space = false;
  for (size_t at = 0; at < text.size();) {
    const char c = text[at];
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      ++at;
      continue;
    }
    if (space) {
      shorten_word(out, word);
      out += ' ';
      word.clear();
    }
    space = false;
    word.push_back(out.size());
    out += printable_character(text, at);
  }
  shorten_word(out, word);
  return out;
}

}  // namespace ragged::cli
