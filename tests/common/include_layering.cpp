#include "tests/common/include_layering.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <sstream>
#include <system_error>
#include <tuple>
#include <utility>

#include "common/errors.hpp"

namespace ragged::layering {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFence = "```";
constexpr std::string_view kBlock = "```layering";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with_folder(std::string_view path, std::string_view folder) {
  return path == folder ||
         (path.size() > folder.size() && path.substr(0, folder.size()) == folder && path[folder.size()] == '/');
}

std::string first_component(std::string_view path) { return std::string(path.substr(0, path.find('/'))); }

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : " ") + name;
  return out;
}

// A folder name: '/'-separated parts of [a-z0-9_.-], none empty, "." or "..".
bool valid_folder(std::string_view name) {
  if (name.empty()) return false;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (char c : part) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      if (!ok) return false;
    }
    if (end == name.size()) return true;
    start = end + 1;
  }
}

struct Family {
  std::string_view name;
  std::vector<std::string_view> prefixes;  // a header starting with one belongs to it
};

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"simgrid", {"simgrid/", "simgrid.h", "xbt/", "xbt.h", "smpi/"}},
      {"cuda",
       {"cuda", "cublas", "cudnn", "cufft", "curand", "cusolver", "cusparse", "nccl", "nvrtc", "nvtx3/", "nvToolsExt",
        "cub/", "thrust/", "cutlass/", "cute/", "cooperative_groups"}},
      {"mpi", {"mpi.h", "mpi-ext.h", "mpicxx.h", "mpi/", "openmpi/"}},
  };
  return all;
}

// Qt: <QObject>, <QtWidgets/QWidget>, <QtCharts>: a capital Q and a letter.
bool is_qt_header(std::string_view header) {
  return header.size() >= 2 && header[0] == 'Q' && std::isalpha(static_cast<unsigned char>(header[1]));
}

bool is_source(const fs::path& path) {
  static const std::array<std::string_view, 11> kExtensions = {".cpp", ".cc",  ".cxx", ".hpp", ".hh", ".h",
                                                               ".cu",  ".cuh", ".inc", ".ipp", ".tpp"};
  const std::string ext = path.extension().string();
  return std::find(kExtensions.begin(), kExtensions.end(), ext) != kExtensions.end();
}

// `#include <x>` or `#include "x"` on one line: the quote and the path.
bool parse_include(std::string_view line, char& quote, std::string_view& path) {
  line = trim(line);
  if (line.empty() || line.front() != '#') return false;
  line = trim(line.substr(1));
  constexpr std::string_view kInclude = "include";
  if (line.substr(0, kInclude.size()) != kInclude) return false;
  line = trim(line.substr(kInclude.size()));
  if (line.empty() || (line.front() != '"' && line.front() != '<')) return false;
  quote = line.front();
  const size_t close = line.find(quote == '"' ? '"' : '>', 1);
  if (close == std::string_view::npos) return false;
  path = line.substr(1, close - 1);
  return true;
}

class MatrixReader {
 public:
  MatrixReader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw InputError(std::string(origin_) + ":" + std::to_string(line) + ": " + what);
  }

  Matrix read(std::string_view markdown) {
    std::istringstream in{std::string(markdown)};
    std::string text;
    int number = 0, opened_at = 0;
    bool inside = false, closed = false;
    while (std::getline(in, text)) {
      ++number;
      const std::string_view line = trim(text);
      if (!inside) {
        if (line == kBlock) {
          if (closed)
            fail(number, "a second ```layering block (the first ends at line " + std::to_string(closed_at_) +
                             "): keep one matrix");
          inside = true;
          opened_at = number;
        }
        continue;
      }
      if (line.substr(0, kFence.size()) == kFence) {
        inside = false;
        closed = true;
        closed_at_ = number;
        continue;
      }
      read_line(line, number);
    }
    if (inside) fail(opened_at, "the ```layering block is not closed by a ``` line");
    if (!closed) fail(number, "no ```layering block: the include matrix is missing");
    if (matrix_.allowed.empty()) fail(opened_at, "the ```layering block names no folder");
    for (const auto& [name, uses] : uses_) {
      if (!matrix_.allowed.contains(name))
        fail(uses.front(), "unknown folder '" + name + "': it has no line of its own");
    }
    for (const Family& family : families()) require_family(std::string(family.name), opened_at);
    require_family("qt", opened_at);
    return std::move(matrix_);
  }

 private:
  void require_family(const std::string& name, int line) const {
    if (!matrix_.headers.contains(name))
      fail(line, "the ```layering block has no <" + name + "> line (the folders that may include its headers)");
  }

  void read_line(std::string_view line, int number) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) return;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      fail(number, "expected 'folder: folders it may include' or '<family>: folders', got '" + std::string(line) + "'");
    const std::string_view key = trim(line.substr(0, colon));
    std::set<std::string> names;
    std::istringstream words{std::string(line.substr(colon + 1))};
    for (std::string word; words >> word;) {
      if (!valid_folder(word)) fail(number, "'" + word + "' is not a folder name");
      uses_[word].push_back(number);
      names.insert(word);
    }
    if (key.size() >= 2 && key.front() == '<' && key.back() == '>') {
      const std::string family(key.substr(1, key.size() - 2));
      const auto all = header_families();
      if (std::find(all.begin(), all.end(), family) == all.end())
        fail(number, "unknown header family " + std::string(key) + " (known: <simgrid> <cuda> <mpi> <qt>)");
      if (!matrix_.headers.emplace(family, std::move(names)).second) fail(number, std::string(key) + " is given twice");
      return;
    }
    const std::string folder(key);
    if (!valid_folder(folder)) fail(number, "'" + folder + "' is not a folder name");
    if (!matrix_.allowed.emplace(folder, std::move(names)).second)
      fail(number, "folder '" + folder + "' is given twice");
  }

  std::string_view origin_;
  Matrix matrix_;
  std::map<std::string, std::vector<int>> uses_;
  int closed_at_ = 0;
};

}  // namespace

std::string Matrix::folder_of(std::string_view path) const {
  std::string best;
  for (const auto& [folder, unused] : allowed) {
    if (folder.size() > best.size() && starts_with_folder(path, folder)) best = folder;
  }
  return best;
}

std::vector<std::string> header_families() {
  std::vector<std::string> out;
  for (const Family& family : families()) out.emplace_back(family.name);
  out.emplace_back("qt");
  return out;
}

std::string header_family(std::string_view header) {
  for (const Family& family : families()) {
    for (std::string_view prefix : family.prefixes) {
      if (header.substr(0, prefix.size()) == prefix) return std::string(family.name);
    }
  }
  return is_qt_header(header) ? "qt" : "";
}

Matrix parse_matrix(std::string_view markdown, std::string_view origin) { return MatrixReader(origin).read(markdown); }

std::string Violation::to_string() const {
  std::string out = file + ":" + std::to_string(line) + ": ";
  if (included.empty()) return out + rule;
  return out + (folder.empty() ? std::string("(no folder)") : folder) + " includes " + included + " (" + target +
         "): " + rule;
}

std::vector<Violation> check_tree(const Matrix& matrix, const fs::path& root) {
  std::set<std::string> tops;  // the project's top-level folders
  for (const auto& [folder, unused] : matrix.allowed) tops.insert(first_component(folder));

  auto folder_rule = [&](const std::string& folder) {
    const std::set<std::string>& allowed = matrix.allowed.at(folder);
    return allowed.empty() ? folder + " may include only itself" : folder + " may include " + join(allowed);
  };

  std::vector<Violation> out;
  auto judge = [&](const std::string& file) {
    const std::string folder = matrix.folder_of(file);
    if (folder.empty()) {
      out.push_back({file, 0, "", "", "",
                     "folder '" +
                         (fs::path(file).has_parent_path() ? fs::path(file).parent_path().generic_string() : ".") +
                         "' has no line in the layering matrix (docs/ARCHITECTURE.md): add one"});
      return;
    }
    std::ifstream in(root / file);
    if (!in) throw InputError(file + ": cannot be read");
    std::string text;
    int number = 0;
    while (std::getline(in, text)) {
      ++number;
      char quote = 0;
      std::string_view path;
      if (!parse_include(text, quote, path)) continue;
      const std::string written = quote == '"' ? "\"" + std::string(path) + "\"" : "<" + std::string(path) + ">";
      // The project's folders: written from the root, or relative to the
      // file (a quoted include of a file that exists beside it).
      std::string target;
      if (tops.contains(first_component(path))) {
        target = matrix.folder_of(path);
        if (target.empty()) {
          out.push_back({file, number, folder, written, first_component(path),
                         "the included folder has no line in the layering matrix"});
          continue;
        }
      } else if (quote == '"') {
        const std::string resolved =
            (fs::path(file).parent_path() / std::string(path)).lexically_normal().generic_string();
        if (!resolved.starts_with("../") && fs::exists(root / resolved)) target = matrix.folder_of(resolved);
      }
      if (target.empty()) {
        // Not the project's: a third-party header, judged by its family.
        const std::string family = header_family(path);
        if (family.empty()) continue;
        const std::set<std::string>& may = matrix.headers.at(family);
        if (!may.contains(folder))
          out.push_back({file, number, folder, written, "<" + family + ">",
                         "<" + family + "> headers only in " + (may.empty() ? std::string("no folder") : join(may))});
        continue;
      }
      if (target == folder || matrix.allowed.at(folder).contains(target)) continue;
      out.push_back({file, number, folder, written, target, folder_rule(folder)});
    }
  };

  std::error_code error;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, error), end;
  if (error) throw InputError(root.string() + ": cannot be listed: " + error.message());
  for (; it != end; it.increment(error)) {
    if (error) throw InputError(root.string() + ": cannot be listed: " + error.message());
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    if (it->is_directory()) {
      if (name.starts_with(".") || fs::exists(path / "CMakeCache.txt")) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !is_source(path)) continue;
    judge(path.lexically_relative(root).generic_string());
  }
  std::sort(out.begin(), out.end(), [](const Violation& a, const Violation& b) {
    return std::tie(a.file, a.line, a.included) < std::tie(b.file, b.line, b.included);
  });
  return out;
}

}  // namespace ragged::layering
