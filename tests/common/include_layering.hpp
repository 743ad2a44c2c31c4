#pragma once
// The include-layering check (docs/ARCHITECTURE.md, "Layering"): which
// folders a folder's files may include, and which folders may include the
// headers of SimGrid, CUDA/NCCL, MPI and Qt. The matrix is read from the
// ```layering block of that document, so the document and the check cannot
// drift apart; the tree is walked and every #include line is judged.
//
// Folders are the matrix's keys ("planner", "backend/cuda", "tests/sim"): a
// file belongs to the longest key that is a prefix of its path, and so does
// an included path ("backend/cuda/cuda_run.hpp" is in "backend/cuda", not
// "backend"). A folder may always include itself; any other folder must be
// named in its line. Header families are named in angle brackets.

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ragged::layering {

struct Matrix {
  // folder -> the other folders it may include.
  std::map<std::string, std::set<std::string>> allowed;
  // header family ("simgrid", "cuda", "mpi", "qt") -> the folders that may include it.
  std::map<std::string, std::set<std::string>> headers;

  // The longest key that is `path` or a folder above it; empty when none.
  std::string folder_of(std::string_view path) const;
};

// The header families the matrix may name, in order.
std::vector<std::string> header_families();
// The family of an included header ("cuda_runtime.h" -> "cuda"); empty when
// it belongs to none.
std::string header_family(std::string_view header);

// Reads the one ```layering block of `markdown`. Throws InputError
// "<origin>:<line>: <what is wrong>" on a missing, repeated or unterminated
// block, a malformed line, a repeated or malformed folder, an unknown folder
// or header family.
Matrix parse_matrix(std::string_view markdown, std::string_view origin);

struct Violation {
  std::string file;      // relative to the root, '/'-separated
  int line = 0;          // 1-based; 0 for a file whose folder has no line
  std::string folder;    // the file's folder (its matrix key); empty if none
  std::string included;  // the include as written ("sim/y.hpp", "<mpi.h>")
  std::string target;    // the included folder or "<family>"
  std::string rule;      // what is allowed instead

  // "planner/x.cpp:3: planner includes \"sim/y.hpp\" (sim): planner may include common models scenarios"
  std::string to_string() const;
};

// Walks the folders under `root` (hidden folders and CMake build trees, those
// holding CMakeCache.txt, skipped) and judges every #include of every C++
// source (.cpp .cc .cxx .hpp .hh .h .cu .cuh .inc .ipp .tpp). A source file
// whose folder has no line in the matrix is a violation too. Sorted by file
// and line.
std::vector<Violation> check_tree(const Matrix& matrix, const std::filesystem::path& root);

}  // namespace ragged::layering
