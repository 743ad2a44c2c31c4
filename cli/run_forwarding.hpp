#pragma once
// `ragged run` lives in its own binary, ragged-run, beside ragged: the host
// and CUDA executors (CBLAS, nvcc kernels) are a fifth of the build, and
// `make demo` (`ragged simulate`) needs neither. The light ragged hands a
// `run` command line to ragged-run with execv before anything else happens
// (no MPI_Init, no signal handler), so `mpirun -np 8 ragged run ...` keeps
// its PIDs, environment and argv: every rank becomes ragged-run.

namespace ragged::cli {

inline constexpr const char* kRunBinaryName = "ragged-run";

// True when argv is `ragged run ...`.
bool is_run_command(int argc, char** argv);

// Replaces this process with ragged-run (found beside this binary) and the
// same argv. Returns only when it cannot: after one line on stderr (rank 0's
// under mpirun) naming the fix, with kExitBadInput when ragged-run is not
// built, kExitInternal when it is there but did not start.
int exec_run_binary(char** argv);

}  // namespace ragged::cli
