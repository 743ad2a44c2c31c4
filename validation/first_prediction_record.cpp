#include "validation/first_prediction_record.hpp"

#include <algorithm>
#include <chrono>
#include <cctype>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "common/units.hpp"

namespace ragged::validation {
namespace {

// The offset of the `}` that closes the block `from` lies in (depth 1 at
// `from`), skipping strings and # comments; npos when the text ends first.
size_t closing_brace(std::string_view text, size_t from) {
  int depth = 1;
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) return i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

// The offset of `key` as a field of its own (at a line's or a brace's start,
// not the tail of a longer field name); npos when absent.
size_t field_at(std::string_view text, std::string_view key) {
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    if (at == 0 || std::isspace(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '{') return at;
  }
  return std::string_view::npos;
}

// Throughputs to the unit above 100 tokens/s, three decimals below.
std::string number(double value) { return value >= 100 ? fmt::format("{:.0f}", value) : fmt::format("{:.3f}", value); }

std::string first_prediction_field(const RowResult& row, const PredictionStamp& stamp) {
  std::string memory;
  if (published_memory(row.run.published())) {
    memory = fmt::format(" peak_memory_gib: {:.2f}", static_cast<double>(predicted_memory_bytes(row)) / kGiB);
  }
  return fmt::format("first_prediction {{ tokens_per_s_per_gpu: {} oom: {}{} commit: \"{}\" date: \"{}\" }}",
                     number(row.predicted.tokens_per_s_per_gpu), row.predicted.oom ? "true" : "false", memory,
                     stamp.commit, stamp.date);
}

bool needs_first_prediction(const RowResult& row) {
  return row.status == RowStatus::kSimulated && !row.run.has_first_prediction() &&
         row.predicted.tokens_per_s_per_gpu > 0;
}

}  // namespace

void check_commit(const std::string& commit, const std::string& option) {
  const bool hex = commit.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (commit.size() < 7 || commit.size() > 40 || !hex) {
    throw InputError(fmt::format("{} '{}': give the commit of the build that predicts, 7 to 40 lower-case hex digits "
                                 "(git rev-parse --short HEAD)",
                                 option, commit));
  }
}

std::string today_utc() {
  return fmt::format("{:%Y-%m-%d}", std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now()));
}

std::string with_first_predictions(std::string_view manifest, const std::vector<RowResult>& rows,
                                   const PredictionStamp& stamp, std::vector<RecordedPrediction>* recorded) {
  struct Insertion {
    size_t at;
    std::string id, field;
  };
  std::vector<Insertion> insertions;
  for (const RowResult& row : rows) {
    if (!needs_first_prediction(row)) continue;
    const std::string key = fmt::format("id: \"{}\"", row.run.id());
    const size_t id_at = field_at(manifest, key);
    const size_t end = id_at == std::string_view::npos ? id_at : closing_brace(manifest, id_at + key.size());
    if (end == std::string_view::npos) {
      throw InputError(fmt::format("runs.textproto: no `runs {{ }}` block holds {}: the file changed since it was "
                                   "read; run the command again",
                                   key));
    }
    // Before the closing brace's line when it stands alone, else before the brace.
    const size_t line = manifest.rfind('\n', end);
    const bool alone = line != std::string_view::npos &&
                       manifest.substr(line + 1, end - line - 1).find_first_not_of(" \t") == std::string_view::npos;
    const std::string field = first_prediction_field(row, stamp);
    insertions.push_back({alone ? line + 1 : end, row.run.id(), alone ? "  " + field + "\n" : " " + field + " "});
  }
  std::sort(insertions.begin(), insertions.end(), [](const Insertion& a, const Insertion& b) { return a.at < b.at; });
  std::string out;
  size_t copied = 0;
  for (const Insertion& i : insertions) {
    out.append(manifest.substr(copied, i.at - copied));
    out.append(i.field);
    copied = i.at;
    if (recorded) {
      const size_t first = i.field.find_first_not_of(' '), last = i.field.find_last_not_of(" \n");
      recorded->push_back({i.id, i.field.substr(first, last + 1 - first)});
    }
  }
  out.append(manifest.substr(copied));
  return out;
}

std::vector<RecordedPrediction> record_first_predictions(const ValidationSet& set, const std::vector<RowResult>& rows,
                                                         const PredictionStamp& stamp) {
  check_commit(stamp.commit, "--record-first-predictions");
  const std::filesystem::path manifest = set.directory / kManifestName;
  std::vector<RecordedPrediction> recorded;
  const std::string text = with_first_predictions(read_file(manifest), rows, stamp, &recorded);
  if (recorded.empty()) return recorded;
  // The edited file must read as the same set with the new fields.
  const ValidationSet edited = parse_validation_set(text, manifest.string(), set.directory);
  for (const RecordedPrediction& r : recorded) {
    RAGGED_ASSERT(edited.runs[edited.index_of(r.id)].has_first_prediction(),
                  "record_first_predictions: the inserted field did not land in its run");
  }
  write_file_atomically(manifest, text);
  return recorded;
}

}  // namespace ragged::validation
