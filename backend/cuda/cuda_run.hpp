#pragma once
// `ragged run --device cuda`: this rank's Program on its GPU (one process
// per GPU; `mpirun -np N` for N > 1, NCCL's id shared over MPI; one rank
// needs no MPI). `comm` is the host communicator of the launch (local or
// MPI): it carries the losses and, with --check-reference, the parameters to
// rank 0; the GPU's collectives go through NCCL.

#include "backend/communicator.hpp"
#include "backend/run.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::backend::gpu {

// InputError, naming the field and the fix, for what the GPU backend does
// not run: Muon and Shampoo, an AdamW implementation other than its fused
// kernel, fused-expert/MLA/tied models
// (check_gpu_supported), strategies with persistent compute shards (ZeRO-3,
// Megatron-FSDP), a master dtype other than fp32, --check-reference without
// fp32 parameters, and no GPU at all.
void check_gpu_runnable(const planner::ResolvedScenario& resolved, const RunOptions& options);

RunResult run_on_gpu(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm);

}  // namespace ragged::backend::gpu
