#include "cli/run_forwarding.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "backend/communicator.hpp"
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "common/errors.hpp"

namespace ragged::cli {
namespace {

// The folder of the running binary; /proc/self/exe follows symlinks and
// PATH lookups, argv[0] is the fallback where /proc is missing.
std::filesystem::path own_folder(const char* argv0) {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) self = std::filesystem::absolute(argv0 != nullptr ? argv0 : "", error);
  return self.parent_path();
}

std::string missing_run_binary(const std::filesystem::path& folder, std::string_view binary = kRunBinaryName) {
  return fmt::format(
      "'ragged run' executes in {}, which is not built beside ragged in {}; build it with "
      "'cmake --build {} --target {}' (or 'make', which builds everything)",
      binary, folder.string(), folder.string(), binary);
}

const char* run_binary_in(const std::filesystem::path& folder, int argc, char** argv) {
  if (!asks_for_cuda(argc, argv)) return kRunBinaryName;
  std::error_code error;
  return std::filesystem::exists(folder / kCudaRunBinaryName, error) ? kCudaRunBinaryName : kRunBinaryName;
}

}  // namespace

bool is_run_command(int argc, char** argv) { return argc > 1 && std::string_view(argv[1]) == "run"; }

bool asks_for_cuda(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--device=cuda") return true;
    if (arg == "--device" && i + 1 < argc && std::string_view(argv[i + 1]) == "cuda") return true;
  }
  return false;
}

const char* run_binary_for(int argc, char** argv) { return run_binary_in(own_folder(argv[0]), argc, argv); }

int exec_run_binary(int argc, char** argv) {
  const std::filesystem::path folder = own_folder(argv[0]);
  const char* binary = run_binary_in(folder, argc, argv);
  const std::string run_binary = (folder / binary).string();
  ::execv(run_binary.c_str(), argv);
  const int error = errno;
  // Every rank of an mpirun job fails alike: rank 0 says so.
  if (backend::launcher_rank() > 0) return error == ENOENT ? kExitBadInput : kExitInternal;
  if (error == ENOENT) {
    std::cerr << "ragged: error: " << one_line(missing_run_binary(folder, binary)) << '\n';
    return kExitBadInput;
  }
  std::cerr << "ragged: internal error: "
            << one_line(fmt::format("cannot start {}: {}", run_binary, std::strerror(error))) << '\n';
  return kExitInternal;
}

// Listed in `ragged --help`; main hands `ragged run` to ragged-run before
// parsing, so the command reaches here only in-process.
void add_forwarded_run_command(CLI::App& app, Context&) {
  auto* cmd = app.add_subcommand("run", kRunDescription);
  cmd->prefix_command();
  cmd->callback([] { throw InputError(missing_run_binary(own_folder(nullptr))); });
}

int run_without_executors(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  return run_commands(argc, argv, out, err, add_forwarded_run_command);
}

}  // namespace ragged::cli
