#include <iostream>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
  try {
    return ragged::cli::run(argc, argv, std::cout, std::cerr);
  } catch (...) {
    std::cerr << "ragged: internal error: unexpected exception\n";
    return ragged::cli::kExitInternal;
  }
}
