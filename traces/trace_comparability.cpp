#include "traces/trace_comparability.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace ragged::traces {
namespace {

// A scenario's text format flattened to its leaves: "training.mesh.tp" -> "1",
// in the order they first appear; a repeated field's values joined by ", ".
// Messages are listed apart (their paths), so an empty one still shows.
struct Flat {
  std::vector<std::pair<std::string, std::string>> leaves;
  std::map<std::string, size_t> index;
  std::vector<std::string> messages;

  const std::string* find(const std::string& path) const {
    auto it = index.find(path);
    return it == index.end() ? nullptr : &leaves[it->second].second;
  }
  std::string value(const std::string& path) const {
    const std::string* v = find(path);
    return v != nullptr ? *v : std::string();
  }
  void add(const std::string& path, std::string value) {
    auto [it, fresh] = index.emplace(path, leaves.size());
    if (fresh) leaves.emplace_back(path, std::move(value));
    else leaves[it->second].second += ", " + value;
  }
};

class TextReader {
 public:
  explicit TextReader(std::string_view text) : text_(text) {}

  // False when the text does not read as text format (then nothing is compared from it).
  bool read(Flat& out) {
    std::vector<std::string> stack;
    while (true) {
      skip_space();
      if (at_end()) return stack.empty();
      const char c = text_[pos_];
      if (c == '}' || c == '>') {
        if (stack.empty()) return false;
        stack.pop_back();
        ++pos_;
        continue;
      }
      std::string name = identifier();
      if (name.empty()) return false;
      const std::string path = stack.empty() ? name : stack.back() + "." + name;
      skip_space();
      bool colon = false;
      if (!at_end() && text_[pos_] == ':') {
        colon = true;
        ++pos_;
        skip_space();
      }
      if (at_end()) return false;
      if (text_[pos_] == '{' || text_[pos_] == '<') {
        ++pos_;
        stack.push_back(path);
        out.messages.push_back(path);
        continue;
      }
      if (!colon) return false;
      if (text_[pos_] == '[') {  // a list of scalars
        ++pos_;
        while (true) {
          skip_space();
          if (at_end()) return false;
          if (text_[pos_] == ']') {
            ++pos_;
            break;
          }
          if (text_[pos_] == ',') {
            ++pos_;
            continue;
          }
          std::string v;
          if (!scalar(v)) return false;
          out.add(path, std::move(v));
        }
      } else {
        std::string v;
        if (!scalar(v)) return false;
        out.add(path, std::move(v));
      }
      skip_space();
      if (!at_end() && (text_[pos_] == ',' || text_[pos_] == ';')) ++pos_;
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }

  void skip_space() {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c)) != 0) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string identifier() {
    const size_t start = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == '_')) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // A quoted string (adjacent ones joined, escapes kept but for \" and \\) or a bare token.
  bool scalar(std::string& out) {
    if (text_[pos_] == '"' || text_[pos_] == '\'') {
      while (!at_end() && (text_[pos_] == '"' || text_[pos_] == '\'')) {
        const char quote = text_[pos_++];
        while (true) {
          if (at_end()) return false;
          const char c = text_[pos_++];
          if (c == quote) break;
          if (c == '\\' && !at_end()) {
            const char next = text_[pos_++];
            if (next != '"' && next != '\\' && next != '\'') out += '\\';
            out += next;
          } else {
            out += c;
          }
        }
        skip_space();
      }
      return true;
    }
    const size_t start = pos_;
    while (!at_end()) {
      const char c = text_[pos_];
      if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == ',' || c == ';' || c == '}' || c == '>' ||
          c == ']' || c == '#') {
        break;
      }
      ++pos_;
    }
    out = std::string(text_.substr(start, pos_ - start));
    return !out.empty();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

Flat flatten(const std::string& text) {
  Flat flat;
  if (text.empty() || !TextReader(text).read(flat)) return {};
  return flat;
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string shown(const std::string& v) { return v.empty() ? std::string("unset") : v; }

std::string model_name(const Flat& f) {
  for (const char* path : {"model.catalog", "model.hf_config", "model.inline_spec.name"}) {
    if (const std::string* v = f.find(path)) return *v;
  }
  return {};
}

int64_t gpus_of(const Trace& trace, const Flat& f) {
  if (trace.metadata().world_size() > 0) return trace.metadata().world_size();
  const std::string* per_node = f.find("cluster.gpus_per_node");
  const std::string* nodes = f.find("cluster.nodes");
  if (per_node == nullptr || nodes == nullptr) return 0;
  try {
    return std::stoll(*per_node) * std::stoll(*nodes);
  } catch (const std::exception&) {
    return 0;
  }
}

// The optimizer the training block names: "adamw", "muon", ... ("" if none).
std::string optimizer_kind(const Flat& f) {
  constexpr std::string_view prefix = "training.optimizer.";
  for (const std::string& m : f.messages) {
    if (starts_with(m, prefix) && m.find('.', prefix.size()) == std::string::npos) return m.substr(prefix.size());
  }
  return {};
}

// Every path of either side with a prefix, in order of first appearance (predicted first).
std::vector<std::string> paths_under(const Flat& a, const Flat& b, std::string_view prefix) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Flat* f : {&a, &b}) {
    for (const auto& [path, value] : f->leaves) {
      if (starts_with(path, prefix) && seen.insert(path).second) out.push_back(path);
    }
  }
  return out;
}

const std::string& leaf_name(const std::string& path, std::string& storage) {
  const size_t dot = path.rfind('.');
  storage = dot == std::string::npos ? path : path.substr(dot + 1);
  return storage;
}

}  // namespace

std::string Comparability::describe(size_t limit) const {
  std::string out;
  const size_t shown_count = std::min(limit, differences.size());
  for (size_t i = 0; i < shown_count; ++i) out += (i > 0 ? "; " : "") + differences[i];
  if (differences.size() > shown_count) out += fmt::format("; and {} more", differences.size() - shown_count);
  return out;
}

Comparability comparability(const Trace& predicted, const Trace& measured) {
  Comparability result;
  auto& diffs = result.differences;
  auto differ = [&diffs](const std::string& what, const std::string& p, const std::string& m) {
    diffs.push_back(fmt::format("{} {} vs {}", what, shown(p), shown(m)));
  };
  const Metadata& pm = predicted.metadata();
  const Metadata& mm = measured.metadata();
  const Flat a = flatten(pm.scenario_text()), b = flatten(mm.scenario_text());
  const bool texts = !a.leaves.empty() && !b.leaves.empty();

  // The model: by name, or field by field when the names agree.
  if (texts) {
    const std::string pa = model_name(a), pb = model_name(b);
    if (pa != pb) {
      differ("model", pa, pb);
    } else {
      for (const std::string& path : paths_under(a, b, "model.")) {
        if (a.value(path) == b.value(path)) continue;
        const std::string field = path.substr(std::string_view("model.").size());
        differ(pa.empty() ? "model " + field : "model " + pa + ": " + field, a.value(path), b.value(path));
      }
    }
  }

  // The GPUs: how many, and which.
  const int64_t gpus_p = gpus_of(predicted, a), gpus_m = gpus_of(measured, b);
  const bool gpus_differ = gpus_p > 0 && gpus_m > 0 && gpus_p != gpus_m;
  if (gpus_differ) differ("GPUs", std::to_string(gpus_p), std::to_string(gpus_m));
  if (texts && a.value("cluster.gpu.preset") != b.value("cluster.gpu.preset")) {
    differ("GPU", a.value("cluster.gpu.preset"), b.value("cluster.gpu.preset"));
  }

  // The strategy.
  if (!pm.strategy().empty() && !mm.strategy().empty()) {
    if (pm.strategy() != mm.strategy()) differ("strategy", pm.strategy(), mm.strategy());
  } else if (texts && a.value("training.strategy") != b.value("training.strategy")) {
    differ("strategy", a.value("training.strategy"), b.value("training.strategy"));
  }

  if (!texts) return result;

  // The batch shape, then the rest of what shapes the step.
  constexpr std::array<std::pair<const char*, const char*>, 3> kBatch = {{
      {"training.micro_batch_size", "micro-batch"},
      {"training.sequence_length", "sequence length"},
      {"training.gradient_accumulation_steps", "gradient accumulation steps"},
  }};
  for (const auto& [path, what] : kBatch) {
    if (a.value(path) != b.value(path)) differ(what, a.value(path), b.value(path));
  }
  const std::string opt_p = optimizer_kind(a), opt_m = optimizer_kind(b);
  if (opt_p != opt_m) differ("optimizer", opt_p, opt_m);
  static const std::set<std::string> kHyperParameters = {"lr", "beta1", "beta2", "eps", "epsilon", "weight_decay", "momentum"};
  static const std::set<std::string> kFollowTheGpus = {"training.shard_group_size", "training.replicate_group_size",
                                                       "training.mesh.dp_shard", "training.mesh.dp_replicate"};
  std::string storage;
  for (const std::string& path : paths_under(a, b, "training.")) {
    if (a.value(path) == b.value(path)) continue;
    if (path == "training.strategy" || path == "training.checkpoint_every" || starts_with(path, "training.allocator.")) continue;
    if (std::any_of(kBatch.begin(), kBatch.end(), [&path](const auto& named) { return path == named.first; })) continue;
    if (gpus_differ && kFollowTheGpus.contains(path)) continue;
    if (starts_with(path, "training.optimizer.")) {
      if (opt_p != opt_m || kHyperParameters.contains(leaf_name(path, storage))) continue;
    }
    differ(path, a.value(path), b.value(path));
  }
  for (const char* path : {"run.model_scale", "run.layers"}) {
    if (a.value(path) != b.value(path)) differ(path, a.value(path), b.value(path));
  }
  return result;
}

}  // namespace ragged::traces
