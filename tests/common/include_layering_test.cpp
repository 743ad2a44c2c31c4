// The include layering of docs/ARCHITECTURE.md ("Layering"), enforced: the
// real tree follows the matrix, and the check does catch a wrong include, a
// third-party header out of its folder and a folder the matrix lacks, on
// small trees written here. (Includes below are only ever written inside
// one-line strings: a line of this file that begins with #include is judged.)

#include "tests/common/include_layering.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/file_io.hpp"

namespace ragged::layering {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = RAGGED_SOURCE_DIR;

// A small matrix in the document's form.
const char* const kSmallDoc =
    "# Architecture\n"
    "\n"
    "```layering\n"
    "# folder: what it may include\n"
    "common:\n"
    "planner: common   # pure\n"
    "sim: common planner\n"
    "backend: common planner\n"
    "backend/cuda: common planner backend\n"
    "<simgrid>: sim\n"
    "<cuda>: backend/cuda\n"
    "<mpi>: backend\n"
    "<qt>:\n"
    "```\n";

class TempTree {
 public:
  explicit TempTree(const std::string& tag)
      : root_(fs::temp_directory_path() / ("ragged_layering_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~TempTree() { fs::remove_all(root_); }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  void write(const std::string& file, const std::string& text) const {
    fs::create_directories((root_ / file).parent_path());
    std::ofstream(root_ / file) << text;
  }
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

// A tree that follows kSmallDoc.
void write_clean_tree(const TempTree& tree) {
  tree.write("common/errors.hpp", "#pragma once\n#include <string>\n");
  tree.write("planner/plan.hpp", "#pragma once\n#include \"common/errors.hpp\"\n");
  tree.write("planner/plan.cpp", "#include \"planner/plan.hpp\"\n#include \"plan_detail.hpp\"\n");
  tree.write("planner/plan_detail.hpp", "#pragma once\n");
  tree.write("sim/engine.cpp",
             "#include <simgrid/s4u.hpp>\n#include \"planner/plan.hpp\"\n#include \"sim/engine.hpp\"\n");
  tree.write("sim/engine.hpp", "#pragma once\n");
  tree.write("backend/comm.cpp", "#include <mpi.h>\n#include \"backend/comm.hpp\"\n");
  tree.write("backend/comm.hpp", "#pragma once\n");
  tree.write("backend/cuda/run.cpp",
             "#include <cuda_runtime.h>\n#include <nccl.h>\n#include \"backend/comm.hpp\"\n"
             "#include \"backend/cuda/run.hpp\"\n");
  tree.write("backend/cuda/run.hpp", "#pragma once\n");
  tree.write("docs/notes.md", "#include \"sim/engine.hpp\" is not C++ here\n");
  // A configured build tree inside the source tree is not judged.
  tree.write("build/CMakeCache.txt", "");
  tree.write("build/gen/planner/x.cpp", "#include \"sim/engine.hpp\"\n");
}

std::vector<std::string> lines_of(const std::vector<Violation>& violations) {
  std::vector<std::string> out;
  for (const Violation& v : violations) out.push_back(v.to_string());
  return out;
}

TEST(IncludeLayering, TheSourceTreeFollowsTheMatrix) {
  const fs::path doc = kSourceDir / "docs" / "ARCHITECTURE.md";
  const Matrix matrix = parse_matrix(read_file(doc), "docs/ARCHITECTURE.md");
  // The DESIGN rules themselves, as the matrix must keep them.
  for (const char* pure : {"models", "planner"}) {
    for (const char* above : {"sim", "backend", "backend/cuda", "gui", "gui/models", "traces"})
      EXPECT_FALSE(matrix.allowed.at(pure).contains(above)) << pure << " may include " << above;
    for (const auto& [family, folders] : matrix.headers)
      EXPECT_FALSE(folders.contains(pure)) << pure << " <" << family << ">";
  }
  EXPECT_FALSE(matrix.allowed.at("sim").contains("backend"));
  EXPECT_FALSE(matrix.allowed.at("backend").contains("sim"));
  EXPECT_FALSE(matrix.allowed.at("backend").contains("backend/cuda"));
  for (const auto& [folder, allowed] : matrix.allowed) {
    if (folder.starts_with("gui") || folder == "tests/gui") continue;
    EXPECT_FALSE(allowed.contains("gui") || allowed.contains("gui/models")) << folder << " may include gui";
  }
  for (const std::string& folder : matrix.headers.at("qt"))
    EXPECT_TRUE(folder.starts_with("gui") || folder == "tests/gui") << "Qt in " << folder;

  const std::vector<Violation> violations = check_tree(matrix, kSourceDir);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(lines_of(violations));
}

TEST(IncludeLayering, ACleanTreeHasNoViolation) {
  const TempTree tree("clean");
  write_clean_tree(tree);
  const Matrix matrix = parse_matrix(kSmallDoc, "small.md");
  EXPECT_EQ(lines_of(check_tree(matrix, tree.root())), std::vector<std::string>{});
}

TEST(IncludeLayering, APlannerFileIncludingTheSimulatorIsReported) {
  const TempTree tree("wrong");
  write_clean_tree(tree);
  tree.write("planner/x.cpp",
             "// the planner must not see the simulator\n#include \"planner/plan.hpp\"\n"
             "  #  include \"sim/engine.hpp\"\n");
  const std::vector<Violation> violations = check_tree(parse_matrix(kSmallDoc, "small.md"), tree.root());
  ASSERT_EQ(violations.size(), 1u) << ::testing::PrintToString(lines_of(violations));
  const Violation& v = violations[0];
  EXPECT_EQ(v.file, "planner/x.cpp");
  EXPECT_EQ(v.line, 3);
  EXPECT_EQ(v.folder, "planner");
  EXPECT_EQ(v.included, "\"sim/engine.hpp\"");
  EXPECT_EQ(v.target, "sim");
  EXPECT_EQ(v.to_string(), "planner/x.cpp:3: planner includes \"sim/engine.hpp\" (sim): planner may include common");
}

TEST(IncludeLayering, PeersAndTheSubfoldersAboveThemAreKeptApart) {
  const TempTree tree("peers");
  write_clean_tree(tree);
  tree.write("sim/peer.cpp", "#include \"backend/comm.hpp\"\n");
  tree.write("backend/up.cpp", "#include <backend/cuda/run.hpp>\n");  // the shared top never sees cuda/
  tree.write("planner/rel.cpp", "#include \"../sim/engine.hpp\"\n");  // a relative path is no way around
  EXPECT_EQ(lines_of(check_tree(parse_matrix(kSmallDoc, "small.md"), tree.root())),
            (std::vector<std::string>{
                "backend/up.cpp:1: backend includes <backend/cuda/run.hpp> (backend/cuda): backend may include common "
                "planner",
                "planner/rel.cpp:1: planner includes \"../sim/engine.hpp\" (sim): planner may include common",
                "sim/peer.cpp:1: sim includes \"backend/comm.hpp\" (backend): sim may include common planner",
            }));
}

TEST(IncludeLayering, ThirdPartyHeadersStayInTheirFolders) {
  const TempTree tree("third");
  write_clean_tree(tree);
  tree.write("planner/a.cpp", "#include <mpi.h>\n#include <simgrid/s4u/Engine.hpp>\n");
  tree.write("backend/b.cpp", "#include <cublas_v2.h>\n#include <QObject>\n#include <QtWidgets/QWidget>\n");
  tree.write("sim/c.cpp", "#include \"mpi.h\"\n#include <queue>\n#include <xbt/log.h>\n");
  EXPECT_EQ(lines_of(check_tree(parse_matrix(kSmallDoc, "small.md"), tree.root())),
            (std::vector<std::string>{
                "backend/b.cpp:1: backend includes <cublas_v2.h> (<cuda>): <cuda> headers only in backend/cuda",
                "backend/b.cpp:2: backend includes <QObject> (<qt>): <qt> headers only in no folder",
                "backend/b.cpp:3: backend includes <QtWidgets/QWidget> (<qt>): <qt> headers only in no folder",
                "planner/a.cpp:1: planner includes <mpi.h> (<mpi>): <mpi> headers only in backend",
                "planner/a.cpp:2: planner includes <simgrid/s4u/Engine.hpp> (<simgrid>): <simgrid> headers only in sim",
                "sim/c.cpp:1: sim includes \"mpi.h\" (<mpi>): <mpi> headers only in backend",
            }));
}

TEST(IncludeLayering, AFolderWithoutALineIsReported) {
  const TempTree tree("unknown");
  write_clean_tree(tree);
  tree.write("tools/probe.cpp", "#include \"common/errors.hpp\"\n");
  tree.write("planner/p.cpp", "#include \"tools/probe.hpp\"\n");
  EXPECT_EQ(lines_of(check_tree(parse_matrix(kSmallDoc, "small.md"), tree.root())),
            (std::vector<std::string>{
                "tools/probe.cpp:0: folder 'tools' has no line in the layering matrix (docs/ARCHITECTURE.md): add one",
            }));
}

TEST(IncludeLayering, HeaderFamilies) {
  EXPECT_EQ(header_family("cuda_runtime_api.h"), "cuda");
  EXPECT_EQ(header_family("nccl.h"), "cuda");
  EXPECT_EQ(header_family("mpi.h"), "mpi");
  EXPECT_EQ(header_family("simgrid/s4u.hpp"), "simgrid");
  EXPECT_EQ(header_family("QAbstractTableModel"), "qt");
  EXPECT_EQ(header_family("queue"), "");
  EXPECT_EQ(header_family("fmt/format.h"), "");
  EXPECT_EQ(header_family("gtest/gtest.h"), "");
}

// What parse_matrix says about a malformed matrix: the document, the line
// and what is wrong.
std::string parse_error(const std::string& doc) {
  try {
    parse_matrix(doc, "doc.md");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(parsed)";
}

std::string with_block(const std::string& body) {
  return "text\n```layering\n" + body + "<simgrid>:\n<cuda>:\n<mpi>:\n<qt>:\n```\n";
}

TEST(IncludeLayering, AMalformedMatrixIsAClearError) {
  EXPECT_EQ(parse_error("# Architecture\nno block here\n"),
            "doc.md:2: no ```layering block: the include matrix is missing");
  EXPECT_EQ(parse_error("a\n```layering\ncommon:\n"), "doc.md:2: the ```layering block is not closed by a ``` line");
  EXPECT_EQ(parse_error("```layering\n```\n"), "doc.md:1: the ```layering block names no folder");
  EXPECT_EQ(parse_error(with_block("common:\nplanner common\n")),
            "doc.md:4: expected 'folder: folders it may include' or '<family>: folders', got 'planner common'");
  EXPECT_EQ(parse_error(with_block("common:\nplanner: common models\n")),
            "doc.md:4: unknown folder 'models': it has no line of its own");
  EXPECT_EQ(parse_error(with_block("common:\ncommon:\n")), "doc.md:4: folder 'common' is given twice");
  EXPECT_EQ(parse_error(with_block("common:\nPlanner/: common\n")), "doc.md:4: 'Planner/' is not a folder name");
  EXPECT_EQ(parse_error(with_block("common:\nplanner: ../common\n")), "doc.md:4: '../common' is not a folder name");
  EXPECT_EQ(parse_error(with_block("common:\n<boost>: common\n")),
            "doc.md:4: unknown header family <boost> (known: <simgrid> <cuda> <mpi> <qt>)");
  EXPECT_EQ(parse_error("```layering\ncommon:\n<simgrid>:\n<cuda>:\n<mpi>:\n```\n"),
            "doc.md:1: the ```layering block has no <qt> line (the folders that may include its headers)");
  EXPECT_EQ(parse_error(with_block("common:\n") + "```layering\ncommon:\n```\n"),
            "doc.md:9: a second ```layering block (the first ends at line 8): keep one matrix");
  EXPECT_EQ(parse_error(with_block("common:\n")), "(parsed)");
}

}  // namespace
}  // namespace ragged::layering
