#pragma once
// `ragged run` lives in its own binary, ragged-run, beside ragged: the host
// and CUDA executors (CBLAS, nvcc kernels) are a fifth of the build, and
// `make demo` (`ragged simulate`) needs neither. The light ragged hands a
// `run` command line to ragged-run with execv before anything else happens
// (no MPI_Init, no signal handler), so `mpirun -np 8 ragged run ...` keeps
// its PIDs, environment and argv: every rank becomes ragged-run.
// `--device cuda` goes to ragged-run-cuda instead, where it is built: only it
// links the CUDA libraries, whose start-up (cuBLASLt's) costs a process about
// 0.4 s of CPU that every rank of a host run would pay.

namespace ragged::cli {

inline constexpr const char* kRunBinaryName = "ragged-run";
inline constexpr const char* kCudaRunBinaryName = "ragged-run-cuda";

// True when argv is `ragged run ...`.
bool is_run_command(int argc, char** argv);

// True when the command line asks for `--device cuda` (or `--device=cuda`).
bool asks_for_cuda(int argc, char** argv);

// The binary that runs this command line: ragged-run-cuda when it asks for
// --device cuda and ragged-run-cuda is built beside this binary, ragged-run
// otherwise (whose --device cuda then says that ragged-run-cuda is not built).
const char* run_binary_for(int argc, char** argv);

// Replaces this process with run_binary_for(argv) (found beside this binary)
// and the same argv. Returns only when it cannot: after one line on stderr
// (rank 0's under mpirun) naming the fix, with kExitBadInput when ragged-run
// is not built, kExitInternal when it is there but did not start.
int exec_run_binary(int argc, char** argv);

}  // namespace ragged::cli
